import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { removeTree, type TestHost } from '@taskward/testkit'
import { answerWorkspace, bootRecovery, closeRecovery, readyTask, recoveryRecords } from './fixtures'

/*
 * Exact candidate validation: the checks run on copies of the candidate the attempt records. The
 * candidate is read, then each check's copy is made, later — a write in between (the agent working on
 * while a stage report is verified, a process it left running; here a copy-mode check writing the real
 * workspace by its absolute path) would have the next check judge other files under the recorded
 * digest. The workspace is read again once each copy is made.
 */
describe('recovery: the checks run on the candidate the attempt records', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  let cwd: string | undefined

  afterEach(async () => {
    await closeRecovery(host, cwd)
    host = cwd = undefined
  })

  it('refuses an attempt whose workspace keeps moving under its copies (ARTIFACT_CHANGED), recording nothing', async () => {
    host = await bootRecovery({ sandbox: 'copy' })
    cwd = await answerWorkspace('alpha')
    const writer = { id: 'writer', argv: ['sh', '-c', `echo more >> '${join(cwd, 'answer.txt')}'`], timeoutMs: 20_000 }
    const reader = { id: 'reader', argv: ['sh', '-c', 'cat answer.txt'], timeoutMs: 20_000 }
    const { session, task } = await readyTask(host, cwd, [writer, reader])
    const refused = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' }).then(() => undefined, (error) => error)
    expect(refused?.code, 'the reader would have judged a workspace the recorded digest is not of').to.equal('ARTIFACT_CHANGED')
    expect(refused.details).to.include({ reason: 'candidate-moved', checkId: 'reader' })
    expect(refused.message).to.match(/nothing was recorded/)
    expect(await recoveryRecords(session, 'attempt')).to.have.length(0)
  })

  it('reads the candidate again when the workspace moved once, and records the candidate its copies were of', async () => {
    host = await bootRecovery({ sandbox: 'copy' })
    cwd = await answerWorkspace('alpha')
    const once = join(cwd, '..', `${cwd.split('/').pop()}.wrote`)
    const writer = { id: 'writer', argv: ['sh', '-c', `[ -e '${once}' ] || { touch '${once}'; echo beta > '${join(cwd, 'answer.txt')}'; }`], timeoutMs: 20_000 }
    const reader = { id: 'reader', argv: ['sh', '-c', 'cat answer.txt'], timeoutMs: 20_000 }
    const { session, task } = await readyTask(host, cwd, [writer, reader])
    try {
      const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
      expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('beta\n')
      // The candidate recorded is the workspace the reader's copy was made of.
      expect(attempt.candidate.digest).to.equal((await host.ctx.workspace.stamp(cwd)).digest)
      expect(attempt.checks.find((check) => check.checkId === 'reader')?.outputExcerpt).to.match(/beta/)
      expect(await recoveryRecords(session, 'attempt')).to.have.length(1)
    } finally {
      await removeTree(once)
    }
  })
})

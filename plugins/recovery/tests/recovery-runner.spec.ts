import { expect } from 'chai'
import { mkdtemp, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { removeTree, type TestHost } from '@taskward/testkit'
import { findOnPath } from '../src'
import { answerWorkspace, bootRecovery, checkAreas, readyTask, recoveryRecords, type RecoveryConfig } from './fixtures'

describe('recovery: the check runner (real processes through the plugin)', () => {
  let host: TestHost
  let cwd: string
  const saved = { fake: process.env.TASKWARD_FAKE_SECRET, aws: process.env.AWS_SECRET_ACCESS_KEY }

  async function attemptWith(checks: object[], config: RecoveryConfig = {}) {
    host = await bootRecovery(config)
    cwd = await answerWorkspace()
    const { session, task } = await readyTask(host, cwd, checks)
    const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    return { session, task, attempt }
  }

  afterEach(async () => {
    if (saved.fake === undefined) delete process.env.TASKWARD_FAKE_SECRET
    else process.env.TASKWARD_FAKE_SECRET = saved.fake
    if (saved.aws === undefined) delete process.env.AWS_SECRET_ACCESS_KEY
    else process.env.AWS_SECRET_ACCESS_KEY = saved.aws
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  for (const sandbox of ['copy', 'bwrap'] as const) {
    it(`records the verdict of a check that leaves its copy unremovable (a directory chmod 000 with files in it), and removes the copy (${sandbox})`, async function () {
      if (sandbox === 'bwrap' && !await findOnPath('bwrap')) this.skip()
      const tag = `locked-${process.pid}-${Date.now()}`
      const { attempt } = await attemptWith([{ id: 'locks', argv: ['sh', '-c', `touch ${tag} && mkdir -p locked/sub && touch locked/sub/f && chmod 000 locked`], timeoutMs: 10_000 }], { sandbox })
      expect(attempt.checks[0]).to.include({ checkId: 'locks', verdict: 'PASS' })
      const left = []
      for (const area of await checkAreas()) {
        if ((await readdir(join(area, 'work')).catch(() => [] as string[])).includes(tag)) left.push(area)
      }
      expect(left).to.deep.equal([])
    })
  }

  it('runs a check with a scrubbed environment: no host credential, no TASKWARD_* variable, a temp HOME', async () => {
    process.env.TASKWARD_FAKE_SECRET = 'fake-secret-value-1234'
    process.env.AWS_SECRET_ACCESS_KEY = 'aws-fake-secret-5678'
    const { attempt } = await attemptWith([{ id: 'env', argv: ['env'], timeoutMs: 10_000 }])
    const output = attempt.checks[0].outputExcerpt!
    expect(attempt.checks[0].verdict).to.equal('PASS')
    expect(output).to.not.match(/fake-secret-value|aws-fake-secret|TASKWARD_|AWS_/)
    const names = output.trim().split('\n').map((line) => line.split('=')[0]).sort()
    expect(names).to.deep.equal(['HOME', 'LANG', 'PATH', 'TZ'])
    expect(output).to.match(/HOME=.*taskward-check-/)
    expect(output).to.not.include(`HOME=${process.env.HOME}\n`)
  })

  it('leaves the candidate unchanged when a check writes to relative paths, and removes its copy', async () => {
    // On disk, in the private temp directory below (a copy in memory: recovery-memory-copies.spec.ts).
    host = await bootRecovery({ memoryCopyBytes: 0 })
    cwd = await answerWorkspace()
    const { session, task } = await readyTask(host, cwd, [
      { id: 'writer', argv: ['sh', '-c', 'echo x > file && echo changed > answer.txt && rm README.md'], timeoutMs: 10_000 },
    ])
    // The check's copy goes to a temp directory of this test alone: other suites (and other processes)
    // make check copies in the shared one at the same time.
    const privateTmp = await mkdtemp(join(tmpdir(), 'taskward-runner-tmp-'))
    const savedTmp = process.env.TMPDIR
    process.env.TMPDIR = privateTmp
    let attempt: Awaited<ReturnType<typeof attemptWith>>['attempt']
    let leftovers: string[]
    try {
      attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
      leftovers = await readdir(privateTmp)
    } finally {
      if (savedTmp === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = savedTmp
      await removeTree(privateTmp)
    }
    expect(attempt.checks[0].verdict).to.equal('PASS')
    expect(await readFile(`${cwd}/answer.txt`, 'utf8')).to.equal('alpha')
    expect(await readFile(`${cwd}/README.md`, 'utf8')).to.equal('# answers\n')
    expect((await readdir(cwd)).sort()).to.deep.equal(['README.md', 'answer.txt'])
    const stamp = await host.ctx.workspace.stamp(cwd)
    expect(attempt.candidate.digest).to.equal(stamp.digest)
    expect(leftovers, 'the check copy was removed').to.deep.equal([])
    expect((await recoveryRecords(session, 'attempt'))).to.have.length(1)
  })

  it('kills a check that times out (FAIL, reason timeout) together with its process group', async () => {
    const { attempt } = await attemptWith([{ id: 'slow', argv: ['sh', '-c', 'sleep 30 & sleep 30'], timeoutMs: 300 }])
    expect(attempt.checks[0]).to.include({ verdict: 'FAIL', reason: 'timeout' })
    expect(attempt.checks[0].durationMs).to.be.below(5000)
  })

  it('bounds a timed-out check even when a descendant left its process group holding the output open', async () => {
    const started = Date.now()
    const { attempt } = await attemptWith([{ id: 'escaper', argv: ['sh', '-c', 'setsid sleep 30 & echo started; sleep 30'], timeoutMs: 300 }], { sandbox: 'copy' })
    // A functional bound (the escaped sleep lives 30 s), not a speed benchmark.
    expect(Date.now() - started).to.be.below(5000)
    expect(attempt.checks[0]).to.include({ verdict: 'FAIL', reason: 'timeout' })
    expect(attempt.checks[0].outputExcerpt).to.match(/started/)
  })

  it('finishes a check that exits 0 at once while an escaped descendant keeps its output open: PASS, promptly', async () => {
    const started = Date.now()
    const { attempt } = await attemptWith([{ id: 'daemon', argv: ['sh', '-c', 'setsid sleep 30 & echo started'], timeoutMs: 300 }], { sandbox: 'copy' })
    expect(Date.now() - started).to.be.below(5000)
    expect(attempt.checks[0]).to.include({ verdict: 'PASS', exitCode: 0 })
    expect(attempt.checks[0].outputExcerpt).to.match(/started/)
  })

  it('classifies a program that does not exist as not-runnable, and decides STOP non_retryable', async () => {
    const { session, task, attempt } = await attemptWith([{ id: 'ghost', argv: ['no-such-program-taskward'], timeoutMs: 1000 }])
    expect(attempt.checks[0]).to.include({ verdict: 'INCONCLUSIVE', reason: 'not-runnable' })
    const decision = await host.ctx.recovery.decide(session, task.id)
    expect(decision).to.include({ action: 'STOP', stopReason: 'non_retryable', reason: 'CHECK_NOT_RUNNABLE' })
  })

  it('keeps the head and the tail of a large output within outputLimitBytes, and signatures ignore the temp copy path', async () => {
    const { session, attempt } = await attemptWith([
      { id: 'loud', argv: ['sh', '-c', 'echo FIRST; yes filler | head -c 200000; echo; echo "failed in $PWD"; exit 3'], timeoutMs: 10_000 },
    ], { outputLimitBytes: 4096 })
    const check = attempt.checks[0]
    expect(check).to.include({ verdict: 'FAIL', exitCode: 3 })
    expect(check.outputExcerpt).to.match(/bytes of output omitted/)
    expect(check.outputExcerpt).to.match(/failed in .*taskward-check-/)
    const again = await host.ctx.recovery.runChecks(session, attempt.taskId, { claim: 'progress' })
    expect(again.checks[0].signature).to.equal(check.signature)
  })

  it('refuses the bwrap sandbox with a coded error where bubblewrap is not installed', async () => {
    host = await bootRecovery({ sandbox: 'bwrap' })
    cwd = await answerWorkspace()
    const { session, task } = await readyTask(host, cwd, [{ id: 'ok', argv: ['true'], timeoutMs: 1000 }])
    // A PATH without bubblewrap stands for a host that lacks it; the check never runs unsandboxed.
    const path = process.env.PATH
    process.env.PATH = await mkdtemp(join(tmpdir(), 'taskward-empty-path-'))
    let code: string | undefined
    try {
      await host.ctx.recovery.runChecks(session, task.id)
    } catch (error) {
      code = (error as any).code
      expect((error as Error).message).to.match(/bubblewrap/)
    } finally {
      await removeTree(process.env.PATH!)
      process.env.PATH = path
    }
    expect(code).to.equal('SERVICE_UNAVAILABLE')
    expect(await recoveryRecords(session, 'attempt')).to.have.length(0)
  })
})

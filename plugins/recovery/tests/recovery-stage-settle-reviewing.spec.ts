import type { ChildProcess } from 'node:child_process'
import { expect } from 'chai'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import { startWorkspaceWriter, answerWorkspace, bootRecovery, command, ok, recoveryRecords, reviewsSettled, until } from './fixtures'

/*
 * Review of issue 30 point 2 (background.ts `superseded`, settle.ts `stageVerificationSuperseded`):
 * a stage report moves the task to phase 'reviewing' until its stage review answers. A real reviewer
 * takes seconds; the settle loop's retry then finds the task "not active" and stops as if superseded —
 * no attempt, no `unverified` record: the verification is silently dropped, which point 2 forbids.
 * The reviewer here is held until the verification has settled, like a slow model.
 */
describe('recovery: a stage verification that lost a round while its stage review is still pending', function () {
  this.timeout(90_000)
  let host: TestHost | undefined
  let cwd: string | undefined
  let writer: ChildProcess | undefined

  afterEach(async () => {
    writer?.kill('SIGKILL')
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
    host = cwd = writer = undefined
  })

  it('is verified (or recorded as unverified) once the workspace settles — not dropped', async () => {
    host = await bootRecovery({ sandbox: 'copy', settle: { quietMs: 150, maxWaitMs: 600, maxRounds: 5, deadlineMs: 30_000 } })
    cwd = await answerWorkspace('alpha')
    await mkdir(join(cwd, 'bulk'))
    await Promise.all(Array.from({ length: 400 }, (_, i) => writeFile(join(cwd!, 'bulk', `f${i}.txt`), `file ${i}\n`)))
    const { session } = await host.ctx.supervisor.startSession({ cwd }) as { session: Session }
    await command(host, session, '/task new get the answer right')
    await command(host, session, `/task checks ${JSON.stringify([{ id: 'reader', argv: ['sh', '-c', 'cat answer.txt'], timeoutMs: 20_000 }])}`)
    host.scripted.script('reviewer', [{ toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: [], evidenceSeqs: [] } }] }])
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: ['answer is right'], nodes: [{ id: 'a', title: 'first' }, { id: 'b', title: 'second' }] })
    await reviewsSettled(host, session)
    await command(host, session, '/task approve')
    await ok(host, session, 'task_start_node', { nodeId: 'a' })

    const workspace = host.ctx.workspace
    const read = workspace.read
    let reads = 0
    workspace.read = function (...args: Parameters<typeof read>) {
      reads++
      return read.apply(this, args)
    }
    // The stage reviewer is a slow model: it answers once released.
    let release!: () => void
    const released = new Promise<void>((resolve) => { release = resolve })
    host.scripted.script('reviewer', [async () => {
      await released
      return { toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: [], evidenceSeqs: [] } }] }
    }])
    writer = await startWorkspaceWriter(join(cwd, 'scratch.txt'), 600_000)
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await until(() => reads >= 9, 'the verification to lose rounds', 30_000)
    expect(await recoveryRecords(session, 'attempt')).to.have.length(0)
    writer.kill('SIGKILL')
    await new Promise<void>((resolve) => writer!.exitCode !== null || writer!.signalCode !== null ? resolve() : writer!.once('exit', () => resolve()))
    // The workspace holds still now; the verification settles and tries again while the review is pending.
    expect((await host.ctx.supervisor.state(session)).current!.phase).to.equal('reviewing')
    await host.ctx.recovery.settled()
    release()
    await reviewsSettled(host, session)
    const attempts = await recoveryRecords(session, 'attempt')
    const unverified = await recoveryRecords(session, 'unverified')
    expect(attempts.length + unverified.length, 'the stage verification was silently dropped: no attempt, no unverified record').to.be.greaterThan(0)
  })
})

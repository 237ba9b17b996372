import type { ChildProcess } from 'node:child_process'
import { expect } from 'chai'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import { startWorkspaceWriter, answerWorkspace, bootRecovery, command, ok, recoveryRecords, reviewsSettled, scriptReview, until, type RecoveryConfig } from './fixtures'

/*
 * A stage report is verified in the background while the agent works on. A write that lands while a
 * check's copy is made loses that round (the copy is not the candidate); the verification waits until
 * the workspace holds still and verifies again — it is never dropped. One that never settles gives up,
 * coded and recorded. The writer here is a real process writing the real workspace.
 */
describe('recovery: a stage verification that loses the race with a write', function () {
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

  const exited = (child: ChildProcess) => new Promise<void>((resolve) => child.exitCode !== null ? resolve() : child.once('exit', () => resolve()))

  /** A two-node task with a reading check, node a running (a stage report of it is verified in the background). */
  async function runningNode(config: RecoveryConfig): Promise<Session> {
    host = await bootRecovery({ sandbox: 'copy', ...config })
    cwd = await answerWorkspace('alpha')
    // Enough files that one copy takes longer than the writer's interval: every round made while it
    // writes loses (a copy of two files could slip between two writes).
    await mkdir(join(cwd, 'bulk'))
    await Promise.all(Array.from({ length: 400 }, (_, i) => writeFile(join(cwd!, 'bulk', `f${i}.txt`), `file ${i}\n`)))
    const { session } = await host.ctx.supervisor.startSession({ cwd })
    await command(host, session, '/task new get the answer right')
    await command(host, session, `/task checks ${JSON.stringify([{ id: 'reader', argv: ['sh', '-c', 'cat answer.txt'], timeoutMs: 20_000 }])}`)
    scriptReview(host, 'pass')
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: ['answer is right'], nodes: [{ id: 'a', title: 'first' }, { id: 'b', title: 'second' }] })
    await reviewsSettled(host, session)
    await command(host, session, '/task approve')
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
    return session
  }

  it('is verified again once the writes stop, and the attempt is of the settled workspace', async () => {
    const session = await runningNode({ settle: { quietMs: 150, maxWaitMs: 600, maxRounds: 5, deadlineMs: 30_000 } })
    // Counts the workspace readings (the real service's): a round reads before and after its copy.
    const workspace = host!.ctx.workspace
    const read = workspace.read
    let reads = 0
    workspace.read = function (...args: Parameters<typeof read>) {
      reads++
      return read.apply(this, args)
    }
    // The agent writes on after its stage report, until the verification has lost more rounds than
    // its three immediate reads (before, it gave up there and the stage was never verified).
    writer = await startWorkspaceWriter(join(cwd!, 'scratch.txt'), 600_000)
    scriptReview(host!, 'pass')
    await ok(host!, session, 'task_report_stage', { nodeId: 'a' })
    await until(() => reads >= 9, 'the verification to read the workspace past its three immediate rounds', 30_000)
    expect(await recoveryRecords(session, 'attempt'), 'no round won while the writer wrote').to.have.length(0)
    writer.kill('SIGKILL')
    await exited(writer)
    const stoppedAt = Date.now()
    await reviewsSettled(host!, session)
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts, 'the stage verification landed (it was dropped before)').to.have.length(1)
    expect(attempts[0].payload).to.include({ nodeId: 'a', agentClaim: 'progress' })
    // Verified after the writes stopped: its candidate is the workspace as it is now.
    expect(attempts[0].payload.recordedAt).to.be.at.least(stoppedAt - 50)
    expect(attempts[0].payload.candidate.digest).to.equal((await host!.ctx.workspace.stamp(cwd!)).digest)
    expect(await recoveryRecords(session, 'unverified')).to.have.length(0)
    expect((await command(host!, session, '/task checks')).unverified).to.equal(undefined)
  })

  it('gives up, coded and recorded, on a workspace that never settles, and the task goes on', async () => {
    const session = await runningNode({ settle: { quietMs: 50, maxWaitMs: 200, maxRounds: 5, deadlineMs: 1500 } })
    writer = await startWorkspaceWriter(join(cwd!, 'scratch.txt'), 600_000)
    scriptReview(host!, 'pass')
    await ok(host!, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host!, session)
    expect(await recoveryRecords(session, 'attempt')).to.have.length(0)
    const [gaveUp] = await recoveryRecords(session, 'unverified')
    expect(gaveUp?.payload).to.include({ taskId: (await host!.ctx.supervisor.state(session)).current!.id, nodeId: 'a', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled' })
    expect(gaveUp.payload.lostRounds).to.be.at.least(1)
    expect(gaveUp.payload.message).to.match(/kept changing/)
    // Visible to the person: /task checks says which stage was not verified and why.
    const shown = await command(host!, session, '/task checks')
    expect(shown.unverified).to.include({ code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', nodeId: 'a', seq: gaveUp.seq })
    // Nothing else changed: the task executes on, its node passed review.
    const task = (await host!.ctx.supervisor.state(session)).current!
    expect(task.phase).to.equal('active')
    expect(task.nodeRuns.a.status).to.equal('passed')
    writer.kill('SIGKILL')
    await until(() => writer!.exitCode !== null || writer!.signalCode !== null, 'the writer to stop')
  })
})

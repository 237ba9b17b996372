import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { OpenAIMock } from '@taskward/testkit'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, execute, reopenedStates, repairRecords, replyJson, taskward, waitFor } from './dsh-api'
import { dshTaskPlayer } from './dsh-player'

/*
 * Seed 000, "a confirmed proposal whose state transition was interrupted requires another click",
 * in the real DSH: DSH is SIGKILLed once the confirmation receipt is on disk and before the reopened
 * state is written. The crash point is a test-only DSH plugin (tests/dsh/crash-point, added to this
 * home only, as tests/repair-crash.child.ts does on our host with a listener of its own): the bundle has
 * no hook for it. After the restart the proposal is confirmed, the task still complete and nothing
 * runs; one more click reopens it exactly once, without a second receipt.
 */
const CRASH_POINT = fileURLToPath(new URL('./crash-point', import.meta.url))

describe('repair inside the real DSH host: SIGKILL between receipt and reopened state', function () {
  this.timeout(600_000)
  const token = randomBytes(32).toString('base64url')
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string

  // The crash point, in this home only.
  useDsh({ player: dshTaskPlayer(), workspace: 'repair-crash', plugins: [`link:${CRASH_POINT}`], config: { operatorToken: token, ...PASSING_RECOVERY } },
    (dsh) => ({ model, home, web, workspace } = dsh))

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !web) return
    console.log('      dsh output', web.output.slice(-3000))
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))
  const carried = async (sessionId: string) => carriedEvents(sessionId, await web.api('session.history', { sessionId }))

  it('restarts with the proposal confirmed and the task complete, nothing running; the next click reopens it once, with the one receipt', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)
    const done = (await status(sessionId)).task
    const proposed = await taskward(web, `/api/sessions/${sessionId}/repair`, { token, body: { action: 'propose', taskId: done.id, revision: done.revision, reason: 'a.txt must say repaired', rootNodeIds: ['a'] } })
    expect(proposed.status, JSON.stringify(proposed.body)).to.equal(200)
    const click = { action: 'confirm', proposalId: proposed.body.proposalId, taskId: done.id, revision: done.revision }

    // The click: DSH dies under it, so no answer comes back.
    const killed = web
    const exited = new Promise<NodeJS.Signals | null>((resolve) => killed.process.once('exit', (_code, signal) => resolve(signal)))
    const answer = await taskward(web, `/api/sessions/${sessionId}/repair`, { token, body: click }).then((r) => r, (error) => error as Error)
    expect(await exited).to.equal('SIGKILL')
    expect(answer).to.be.instanceOf(Error)
    const fired = /taskward-crash-point: receipt at seq (\d+) is on disk; carried after it in memory: (.*)/.exec(killed.output)
    expect(fired, killed.output.slice(-3000)).to.not.equal(null)
    // The kill came before the reopened state existed even in memory (else this proves nothing).
    expect(fired![2]).to.equal('nothing')

    web = await home.start()
    const restored = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(restored.status, JSON.stringify(restored.body)).to.equal(200)
    expect(restored.body.proposals.map((p: any) => [p.proposal.id, p.status])).to.deep.equal([[click.proposalId, 'confirmed']])
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: done.revision })
    let log = await carried(sessionId)
    expect(repairRecords(log, 'confirm').map((e) => e.seq)).to.deep.equal([Number(fired![1])])
    expect(reopenedStates(log)).to.have.length(0)
    // Not reopened behind the user's back: no turn runs, the task stays complete.
    const served = model.requests.length
    await new Promise((resolve) => setTimeout(resolve, 2000))
    expect(model.requests.length, 'no turn after the restart').to.equal(served)
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: done.revision })

    const again = await taskward(web, `/api/sessions/${sessionId}/repair`, { token, body: click })
    expect(again.status, JSON.stringify(again.body)).to.equal(200)
    expect(again.body).to.include({ outcome: 'reopened', revision: done.revision + 1, acceptanceCycle: 2 })
    await waitFor(async () => {
      const task = (await status(sessionId)).task
      return task.phase === 'complete' && task.revision > done.revision + 1
    }, 'the reopened task to complete again', 120_000)
    const third = await taskward(web, `/api/sessions/${sessionId}/repair`, { token, body: click })
    expect([third.status, third.body.outcome]).to.deep.equal([200, 'already-applied'])
    log = await carried(sessionId)
    expect(repairRecords(log, 'confirm'), 'one receipt').to.have.length(1)
    expect(reopenedStates(log), 'one reopen').to.have.length(1)
    expect(restored.body.proposals).to.have.length(1)
    expect((await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })).body.proposals.map((p: any) => p.status)).to.deep.equal(['applied'])
  })
})

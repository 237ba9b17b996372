import { expect } from 'chai'
import type { Session } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'
import { VERDICT_REPAIR_PROMPT } from '../src/reviews'
import { approvedTask, bootSupervisor, ok, reviewsSettled, supervisorOf, until, useSupervisedSession, verdict } from './fixtures'

/** Review faults: the one verdict repair turn, REVIEW_FAULT, and the total review deadline. */
describe('supervisor: review faults and deadline', () => {
  let host: TestHost
  let session: Session
  useSupervisedSession((env) => ({ host, session } = env), { boot: () => bootSupervisor({ automaticContinuation: false, reviewDeadlineMs: 1500 }) })

  const state = () => supervisorOf(host).state(session)
  const faults = async () => (await session.read({ from: 0, limit: 10_000 })).filter((e) => e.type === 'review/fault')
  const reviewerTurns = () => host.scripted.served.filter((s) => s.role === 'reviewer' && s.step === 0).map((s) => s.input)

  async function reportA() {
    await approvedTask(host, session)
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
  }

  it('a reviewer that answers in text gets one repair turn asking for review_verdict; its verdict then counts', async () => {
    await reportA()
    host.scripted.script('reviewer', [{ text: 'The stage looks complete to me: pass.' }, verdict('pass')])
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    expect((await state()).current!.nodeRuns.a.status).to.equal('passed')
    expect(reviewerTurns().at(-1)).to.equal(VERDICT_REPAIR_PROMPT)
    expect(await faults()).to.have.length(0)
  })

  it('the repair turn is given too when the model reports token usage (model/usage follows the text)', async () => {
    await reportA()
    const usage = { promptTokens: 120, completionTokens: 8 }
    host.scripted.script('reviewer', [{ text: 'The stage looks complete to me: pass.', usage }, { ...verdict('pass'), usage }])
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    expect(reviewerTurns().at(-1)).to.equal(VERDICT_REPAIR_PROMPT)
    expect(await faults()).to.have.length(0)
    expect((await state()).current!.nodeRuns.a.status).to.equal('passed')
  })

  it('text again after the repair turn: the review fails with REVIEW_FAULT and the task pauses, never a stall', async () => {
    await reportA()
    const before = reviewerTurns().length
    host.scripted.script('reviewer', [{ text: 'pass' }, { text: 'I said pass.' }, verdict('pass')])
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    expect((await state()).current).to.include({ phase: 'paused', pauseReason: 'review-fault' })
    // Exactly one repair turn: the third scripted step was never asked for.
    expect(reviewerTurns().length - before).to.equal(2)
    expect(host.scripted.pending('reviewer')).to.equal(1)
    const [fault] = await faults()
    expect(fault.data).to.include({ code: 'REVIEW_FAULT', kind: 'stage' })
    expect(fault.data.message).to.match(/did not record a verdict with review_verdict, even when asked again/)
    host.scripted.reset('reviewer')
  })

  it('a review that outlives reviewDeadlineMs is stopped and fails with REVIEW_FAULT', async () => {
    await reportA()
    let aborted = false
    // A reviewer that never answers: it waits until its request is aborted.
    host.scripted.script('reviewer', [({ signal }) => new Promise((resolve) => signal.addEventListener('abort', () => {
      aborted = true
      resolve({})
    }))])
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await until(async () => (await faults()).length === 1, 'the deadline fault', 5000)
    await reviewsSettled(host, session)
    expect(aborted).to.equal(true)
    expect((await state()).current).to.include({ phase: 'paused', pauseReason: 'review-fault' })
    expect((await faults())[0].data.message).to.match(/deadline of 1500 ms/)
    expect((await state()).reviews.at(-1)).to.include({ kind: 'stage', status: 'failed' })
  })
})

import { expect } from 'chai'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  ANSWER_CHECK, answerWorkspace, bootRecovery, call, command, ok, phase, readyTask, recoveryRecords, reviewsSettled,
  scriptReview, setAnswer, until, type RecoveryConfig,
} from './fixtures'

describe('recovery: the completion gate through a real host', () => {
  let host: TestHost
  let cwd: string

  async function boot(config: RecoveryConfig = {}, answer = 'alpha') {
    host = await bootRecovery(config)
    cwd = await answerWorkspace(answer)
  }
  afterEach(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  it('vetoes a false completion: a failing check refuses with VERDICT_NEGATIVE and no completion review is requested', async () => {
    await boot()
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    const reviewsBefore = (await host.ctx.supervisor.state(session)).reviews.length
    const outcome = await call(host, session, 'task_request_completion', { summary: 'all done' })
    expect(outcome.error?.code).to.equal('VERDICT_NEGATIVE')
    expect(outcome.error?.message).to.match(/answer/)
    const state = await host.ctx.supervisor.state(session)
    expect(state.current!.phase).to.equal('active')
    expect(state.reviews.length).to.equal(reviewsBefore)
    const [attempt] = await recoveryRecords(session, 'attempt')
    expect(attempt.payload).to.include({ taskId: task.id, agentClaim: 'done', index: 1 })
    expect(attempt.payload.checks[0]).to.include({ checkId: 'answer', verdict: 'FAIL', exitCode: 1 })
    expect(attempt.payload.checks[0].outputExcerpt).to.match(/wrong answer: alpha/)
    const [decision] = await recoveryRecords(session, 'decision')
    expect(decision.payload).to.include({ action: 'RETRY', verdict: 'FAIL', reason: 'FAIL_FIRST_ATTEMPT' })
  })

  it('stops unverified when no checks are configured: paused, VALIDATION_MISSING, never complete', async () => {
    await boot({ checks: [] })
    const { session } = await readyTask(host, cwd)
    const outcome = await call(host, session, 'task_request_completion', {})
    expect(outcome.error?.code).to.equal('VALIDATION_MISSING')
    expect(outcome.error?.message).to.match(/unverified/)
    await host.ctx.recovery.settled()
    const task = await phase(host, session)
    expect(task).to.include({ phase: 'paused', pauseReason: 'recovery' })
    const [decision] = await recoveryRecords(session, 'decision')
    expect(decision.payload).to.include({ action: 'STOP', stopReason: 'unverified', verdict: 'MISSING' })
    expect(await recoveryRecords(session, 'receipt')).to.have.length(0)
  })

  it('completes an actual correction over three attempts with exactly one receipt, and only after the reviewer passes', async () => {
    await boot()
    const { session } = await readyTask(host, cwd, [ANSWER_CHECK])
    expect((await call(host, session, 'task_request_completion', {})).error?.code).to.equal('VERDICT_NEGATIVE')
    await setAnswer(cwd, 'beta')
    const second = await call(host, session, 'task_request_completion', {})
    expect(second.error?.code).to.equal('VERDICT_NEGATIVE')
    expect((await recoveryRecords(session, 'decision'))[1].payload).to.include({ action: 'RETRY', reason: 'FAIL_PROGRESS' })

    await setAnswer(cwd, 'right')
    scriptReview(host, 'revise', ['explain the answer'])
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    // A passing verdict is not completion: the reviewer still decides.
    expect((await phase(host, session)).phase).to.equal('active')

    scriptReview(host, 'pass')
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    expect((await phase(host, session)).phase).to.equal('complete')

    const receipts = await recoveryRecords(session, 'receipt')
    expect(receipts).to.have.length(1)
    const stamp = await host.ctx.workspace.stamp(cwd)
    expect(receipts[0].payload.digest).to.equal(stamp.digest)
    const state = await host.ctx.recovery.state(session)
    expect(state.authoritative).to.equal(stamp.digest)
    expect(state.journal.filter((r) => r.kind === 'candidate').map((r) => r.payload.stage)).to.deep.equal(['proposed', 'verified', 'committed'])
  })

  it('writes a promotion and its decision as one append, and a batch with a record that would not fold writes none of it', async () => {
    await boot({}, 'right')
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'COMPLETE' })
    const written = (await recoveryRecords(session)).filter((r) => ['candidate', 'receipt', 'decision'].includes(r.kind))
    expect(written.map((r) => r.kind)).to.deep.equal(['candidate', 'candidate', 'candidate', 'receipt', 'decision'])
    // Consecutive seqs: nothing came between them, and they went to the store together.
    expect(written.map((r) => r.seq - written[0].seq)).to.deep.equal([0, 1, 2, 3, 4])

    const { digest } = (await host.ctx.recovery.state(session)).journal[0].payload
    const seq = session.seq
    const refused = await host.ctx.recovery.appendRecords(session, [
      { kind: 'strategy', recordId: `${task.id}-s-test`, payload: { taskId: task.id, text: 'try another way', proposedBy: 'user', at: Date.now() } },
      // A second receipt for the same promotion: the journal refuses it.
      { kind: 'receipt', recordId: 'candidate-1:receipt-again', payload: { journalId: 'candidate-1', digest, at: Date.now() } },
    ]).then(() => undefined, (error) => error)
    expect(refused?.code).to.equal('INTERNAL')
    expect(refused?.message).to.match(/second receipt/)
    expect(session.seq).to.equal(seq)
    expect(await recoveryRecords(session, 'strategy')).to.have.length(0)
    // Nothing to append is nothing written, not a refusal.
    const journal = (await host.ctx.recovery.state(session)).journal
    expect((await host.ctx.recovery.appendRecords(session, [])).journal).to.deep.equal(journal)
    expect(session.seq).to.equal(seq)
  })

  it('changes strategy after the identical failure twice and queues a controller follow-up', async () => {
    await boot()
    const { session } = await readyTask(host, cwd, [ANSWER_CHECK])
    await call(host, session, 'task_request_completion', {})
    const second = await call(host, session, 'task_request_completion', {})
    expect(second.error?.code).to.equal('VERDICT_NEGATIVE')
    expect(second.error?.message).to.match(/another approach/)
    const decisions = await recoveryRecords(session, 'decision')
    expect(decisions[1].payload).to.include({ action: 'CHANGE_STRATEGY', reason: 'FAIL_STAGNATION_IDENTICAL' })
    await host.ctx.recovery.settled()
    await until(async () => (await host.ctx.supervisor.state(session)) && (await recoveryRecords(session)).length > 0 &&
      (await session.read({ from: 0, limit: 1000 })).some((e) => e.type === 'user/message' && e.data.origin === 'controller' && /different approach/.test(e.data.text)),
    'the strategy follow-up')
    expect((await phase(host, session)).phase).to.equal('active')
  })

  it('stops on stagnation with BUDGET_EXHAUSTED when no strategy change is permitted', async () => {
    await boot({ budgets: { maxStrategyChanges: 0 } })
    const { session } = await readyTask(host, cwd, [ANSWER_CHECK])
    await call(host, session, 'task_request_completion', {})
    const second = await call(host, session, 'task_request_completion', {})
    expect(second.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect(second.error?.message).to.match(/stagnation/)
    await host.ctx.recovery.settled()
    expect(await phase(host, session)).to.include({ phase: 'paused', pauseReason: 'recovery' })
  })

  it('re-verifies an inconclusive check without an agent turn, then stops', async () => {
    await boot({ budgets: { maxVerifyReruns: 2 } })
    const killed = { id: 'flaky', argv: ['sh', '-c', 'kill -9 $$'], timeoutMs: 10_000 }
    const { session } = await readyTask(host, cwd, [killed])
    const turnsBefore = (await session.read({ from: 0, limit: 1000 })).filter((e) => e.type === 'assistant/message').length
    const outcome = await call(host, session, 'task_request_completion', {})
    expect(outcome.error?.code).to.equal('VALIDATION_MISSING')
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts.map((a) => a.payload.rerunOf ?? null)).to.deep.equal([null, attempts[0].payload.attemptId, attempts[0].payload.attemptId])
    expect(attempts[0].payload.checks[0]).to.include({ verdict: 'INCONCLUSIVE', reason: 'killed', signal: 'SIGKILL' })
    const actions = (await recoveryRecords(session, 'decision')).map((d) => d.payload.action)
    expect(actions).to.deep.equal(['REVERIFY', 'REVERIFY', 'STOP'])
    const turnsAfter = (await session.read({ from: 0, limit: 1000 })).filter((e) => e.type === 'assistant/message').length
    expect(turnsAfter).to.equal(turnsBefore)
    await host.ctx.recovery.settled()
    expect(await phase(host, session)).to.include({ phase: 'paused', pauseReason: 'recovery' })
  })

  it('keeps budget exhaustion across a restart: the counters come from the records', async () => {
    await boot({ budgets: { maxAttempts: 2 } })
    const { session } = await readyTask(host, cwd, [ANSWER_CHECK])
    expect((await call(host, session, 'task_request_completion', {})).error?.code).to.equal('VERDICT_NEGATIVE')
    await host.restart()
    const again = await host.ctx.sessions.get(session.id)
    await setAnswer(cwd, 'beta')
    const outcome = await call(host, again, 'task_request_completion', {})
    expect(outcome.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect(outcome.error?.message).to.match(/budget_exhausted:attempts/)
    await host.ctx.recovery.settled()
    expect(await phase(host, again)).to.include({ phase: 'paused', pauseReason: 'budget' })
    // Resuming resets nothing: the budget is still used up, so /task resume is refused; nothing was promoted.
    const resumed = await host.ctx.commands.input(again, '/task resume')
    expect(resumed?.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect(resumed?.error?.details).to.include({ budget: 'attempts', limit: 2, used: 2 })
    await host.restart()
    expect((await host.ctx.commands.input(await host.ctx.sessions.get(session.id), '/task resume'))?.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect((await host.ctx.recovery.state(session.id)).authoritative).to.equal(undefined)
  })

  it('records a progress attempt when a stage is reported, and the agent tools only record', async () => {
    await boot({ checks: [ANSWER_CHECK] })
    const { session, task } = await readyTask(host, cwd)
    const [attempt] = await recoveryRecords(session, 'attempt')
    expect(attempt.payload).to.include({ agentClaim: 'progress', nodeId: 'a', index: 1 })
    const retry = await ok(host, session, 'task_request_retry', { reason: 'let me try again' })
    expect(retry).to.include({ recorded: true, changed: 'nothing' })
    const strategy = await ok(host, session, 'task_propose_strategy', { text: 'rewrite the answer file' })
    expect(strategy.message).to.match(/authorizes nothing/)
    const before = await recoveryRecords(session, 'decision')
    expect(before).to.have.length(0)
    expect((await phase(host, session)).phase).to.equal('active')
    await setAnswer(cwd, 'beta')
    await call(host, session, 'task_request_completion', {})
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts[1].payload.agentRequests).to.deep.equal([
      { type: 'retry', text: 'let me try again' }, { type: 'strategy', text: 'rewrite the answer file' },
    ])
    expect((await host.ctx.recovery.state(session)).tasks[task.id].agentRequests).to.equal(3)
  })

  it('/task checks shows and sets the task checks; a shell string is refused', async () => {
    await boot({ checks: [ANSWER_CHECK] })
    const { session } = await readyTask(host, cwd)
    expect(await command(host, session, '/task checks')).to.deep.include({ source: 'config' })
    const bad = await host.ctx.commands.input(session, '/task checks [{"id": "t", "argv": "npm test"}]')
    expect(bad?.error?.code).to.equal('CONFIG_INVALID')
    // An argument no process can receive (a NUL byte) is bad input, not a launcher failure later.
    const nul = await host.ctx.commands.input(session, '/task checks [{"id": "t", "argv": ["sh", "-c", "true\\u0000"]}]')
    expect(nul?.error?.code).to.equal('CONFIG_INVALID')
    expect(nul?.error?.message).to.match(/argument 2 holds a NUL byte/)
    expect(await command(host, session, '/task checks')).to.deep.include({ source: 'config' })
    await command(host, session, '/task checks [{"id": "ok", "argv": ["true"]}]')
    const shown = await command(host, session, '/task checks')
    expect(shown.source).to.equal('task')
    expect(shown.checks).to.deep.equal([{ id: 'ok', argv: ['true'], timeoutMs: 600000 }])
  })
})

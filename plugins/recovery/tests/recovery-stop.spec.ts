import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  allEvents, ANSWER_CHECK, answerWorkspace, bootRecovery, budgetStoppedTask, command, ok, phase, readyTask, recoveryRecords, reviewsSettled,
  scriptReview, until, type RecoveryConfig,
} from './fixtures'

/** A STOP stops execution; budgets act on every attempt; a task's evidence starts with the task. */
describe('recovery: stopping execution, budgets of progress attempts, per-task evidence', function () {
  this.timeout(30_000)
  let host: TestHost
  let cwd: string

  async function boot(config: RecoveryConfig = {}) {
    host = await bootRecovery(config)
    cwd = await answerWorkspace('alpha')
  }
  afterEach(async () => {
    await host?.ctx.recovery?.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  async function idle(sessionId: string) {
    await host.ctx.agents.get(sessionId)!.whenIdle()
    await host.ctx.recovery.settled()
  }

  it('a STOP cancels the running turn: the write the agent would do next never happens, and the task is paused', async () => {
    await boot({ checks: [] })
    const { session } = await readyTask(host, cwd)
    host.scripted.script('main', [
      { toolCalls: [{ name: 'task_request_completion', args: { summary: 'done' } }] },
      { toolCalls: [{ name: 'write', args: { path: 'answer.txt', content: 'written after the stop' } }] },
      { text: 'finished' },
    ])
    host.ctx.agents.get(session.id)!.followup('Finish the task.', { origin: 'user' })
    await idle(session.id)
    expect(await readFile(`${cwd}/answer.txt`, 'utf8')).to.equal('alpha')
    const events = await allEvents(session)
    expect(events.some((e) => e.type === 'tool/call' && e.data.name === 'write')).to.equal(false)
    expect(await phase(host, session)).to.include({ phase: 'paused', pauseReason: 'recovery' })
    const [decision] = await recoveryRecords(session, 'decision')
    expect(decision.payload).to.include({ action: 'STOP', stopReason: 'unverified' })
  })

  /** A two-node task whose two stage reports (progress attempts) use up maxAttempts 2: it stops and pauses. */
  async function stoppedByProgress() {
    await boot({ checks: [ANSWER_CHECK], budgets: { maxAttempts: 2 } })
    return budgetStoppedTask(host, cwd)
  }

  it('progress attempts alone use up maxAttempts: the task stops and pauses without any completion request', async () => {
    const session = await stoppedByProgress()
    expect(await phase(host, session)).to.include({ pauseReason: 'budget' })
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts.map((a) => a.payload.agentClaim)).to.deep.equal(['progress', 'progress'])
    const decisions = await recoveryRecords(session, 'decision')
    expect(decisions).to.have.length(1)
    expect(decisions[0].payload).to.include({ action: 'STOP', stopReason: 'budget_exhausted:attempts', reason: 'BUDGET_ATTEMPTS' })
    expect(decisions[0].payload.budgets).to.include({ maxAttempts: 2 })
    const state = await host.ctx.supervisor.state(session)
    expect(state.reviews.some((job) => job.kind === 'completion')).to.equal(false)
  })

  it('/task resume of a task paused for budget is refused BUDGET_EXHAUSTED naming the budget; raising it makes resume work', async () => {
    const session = await stoppedByProgress()
    const paused = await phase(host, session)
    expect(paused).to.include({ phase: 'paused', pauseReason: 'budget', resumePhase: 'active' })
    const status = await host.ctx.supervisor.status(session)
    expect(status.task).to.include({ pauseReason: 'budget' })
    expect(status.blockedReason).to.include('paused (budget)')

    const refused = await host.ctx.commands.input(session, '/task resume')
    expect(refused?.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect(refused?.error?.message).to.include(`Task ${paused.id} stays paused: its attempts budget is used up (2 of 2, recovery budgets.maxAttempts)`)
      .and.to.include('Raise budgets.maxAttempts in the recovery configuration')
    expect(refused?.error?.details).to.deep.equal({ taskId: paused.id, budget: 'attempts', key: 'maxAttempts', limit: 2, used: 2 })
    // Refused means unchanged: no resume, no revision, and no attempt or decision was spent on it.
    expect(await phase(host, session)).to.deep.equal(paused)
    expect(await recoveryRecords(session, 'attempt')).to.have.length(2)
    expect(await recoveryRecords(session, 'decision')).to.have.length(1)

    // The operator raises the budget (the recovery config) and restarts on the same data.
    await host.ctx.recovery.settled()
    await host.stop()
    const raised = await bootRecovery({ checks: [ANSWER_CHECK], budgets: { maxAttempts: 4 } }, host.dataDir)
    try {
      const restored = await raised.ctx.sessions.get(session.id)
      raised.scripted.script('main', [{ text: 'continuing' }])
      const resumed = await raised.ctx.commands.input(restored, '/task resume')
      expect(resumed?.error).to.equal(undefined)
      expect(await phase(raised, restored)).to.include({ phase: 'active', id: paused.id })
      expect(await phase(raised, restored)).to.not.have.property('pauseReason')
    } finally {
      await raised.ctx.recovery.settled()
      await raised.dispose()
    }
  })

  it('a progress attempt within budget records no decision', async () => {
    await boot({ checks: [ANSWER_CHECK], budgets: { maxAttempts: 3 } })
    const { session } = await readyTask(host, cwd)
    await host.ctx.recovery.settled()
    expect(await recoveryRecords(session, 'attempt')).to.have.length(1)
    expect(await recoveryRecords(session, 'decision')).to.have.length(0)
    expect((await phase(host, session)).phase).to.equal('active')
  })

  it('a second task in a session does not inherit the first task\'s steps or requests', async () => {
    await boot({ checks: [ANSWER_CHECK] })
    const { session, task: first } = await readyTask(host, cwd)
    const agent = host.ctx.agents.get(session.id)!
    host.scripted.script('main', Array.from({ length: 6 }, (_, i) => ({ text: `working on it ${i}` })))
    for (let i = 0; i < 6; i++) {
      agent.followup(`step ${i}`, { origin: 'user' })
      await agent.whenIdle()
    }
    await ok(host, session, 'task_request_retry', { reason: 'first task request' })
    const firstAttempt = await host.ctx.recovery.runChecks(session, first.id, { claim: 'progress' })
    expect(firstAttempt.steps).to.be.at.least(6)

    await command(host, session, '/task clear')
    await command(host, session, '/task new a second objective')
    const second = (await host.ctx.supervisor.state(session)).current!
    expect(second.id).to.not.equal(first.id)
    const attempt = await host.ctx.recovery.runChecks(session, second.id, { claim: 'progress' })
    expect(attempt.steps).to.equal(1)
    expect(attempt).to.not.have.property('agentRequests')
  })
})

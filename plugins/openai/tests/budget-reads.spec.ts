import { expect } from 'chai'
import { taskPlayer } from '@taskward/testkit'
import { until } from './helpers'
import { bootBudgetHost, useRig } from './loopback'

describe('token budget: what a step costs', function () {
  this.timeout(30_000)
  const rig = useRig({
    once: true,
    mock: (mock) => { mock.fallback = taskPlayer({ usage: { prompt_tokens: 100, completion_tokens: 10 } }) },
    boot: (mock) => bootBudgetHost(mock, 1_000_000),
  })

  it('counts a step\'s usage as it is appended: once counted, no step reads the log again for the budget', async () => {
    const { session, agent } = await rig.host.ctx.supervisor.startSession({ cwd: rig.cwd, model: 'openai' })
    // Every paged read of the main session's log (how the guard counted; folds read so too), through
    // the real reader underneath.
    let reads = 0
    const events = session.events.bind(session)
    session.events = (...args) => (reads++, events(...args))
    rig.host.scripted.script('reviewer', [{ toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass' } }] }])
    await rig.host.ctx.commands.input(session, '/task new write a and b')
    await until(async () => (await rig.host.ctx.supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan')
    await agent.whenIdle()
    rig.host.scripted.script('reviewer', Array(4).fill({ toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass' } }] }))
    await rig.host.ctx.commands.input(session, '/task approve')
    const usage = () => rig.host.ctx.database.get('taskward_event', { sessionId: session.id, type: 'model/usage' })
    await until(async () => (await usage()).length >= 5, 'five steps', 10_000)
    const read = reads
    const steps = (await usage()).length
    expect(steps).to.be.at.least(5)
    // The budget's first step counts what the log held; every later step counts from memory (a read
    // of the log per step was the cost).
    expect(read, `${read} paged reads over ${steps} steps`).to.be.at.most(1)
    expect(await session.read({ from: 0, limit: 1000, types: ['agent/refused'] })).to.have.length(0)
  })
})

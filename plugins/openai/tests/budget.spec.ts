import { expect } from 'chai'
import { approve, RECORD_EVENT_TYPE, TASK_NAMESPACE, TASK_STATE_KIND, type SessionEvent } from '@taskward/protocol'
import { taskPlayer, type OpenAIMock } from '@taskward/testkit'
import { taskTokens } from '../src'
import { until } from './helpers'
import { bootBudgetHost, useRig, type Rig } from './loopback'

let seq = 0
const usage = (p: number, c: number): SessionEvent => ({ seq: seq++, type: 'model/usage', time: 0, data: { route: 'r', step: 0, promptTokens: p, completionTokens: c } })
const taskRecord = (id: string): SessionEvent => ({
  seq: seq++, type: RECORD_EVENT_TYPE, time: 0, data: { namespace: TASK_NAMESPACE, kind: TASK_STATE_KIND, schemaVersion: 10, recordId: id, payload: { id } },
})

/** A planning task on the mock: each step reports 100 prompt and 10 completion tokens. */
const reporting100and10 = (mock: OpenAIMock) => { mock.fallback = taskPlayer({ usage: { prompt_tokens: 100, completion_tokens: 10 } }) }

/**
 * A main session on the openai route and the task 'write a and b' in it (its reviewer passes once);
 * with `awaitPlan`, once the plan awaits approval.
 */
async function planTask(rig: Rig, awaitPlan: boolean) {
  const { session, agent } = await rig.host.ctx.supervisor.startSession({ cwd: rig.cwd, model: 'openai' })
  rig.host.scripted.script('reviewer', [{ toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass' } }] }])
  await rig.host.ctx.commands.input(session, '/task new write a and b')
  if (awaitPlan) await until(async () => (await rig.host.ctx.supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan')
  return { session, agent }
}

describe('token budget per task', () => {
  it('counts usage since the task\'s first record; a new task starts from zero (pure)', () => {
    const before = taskTokens({ tokens: 0 }, [usage(5, 5), taskRecord('t1'), usage(100, 10), taskRecord('t1'), usage(1, 1)])
    expect(before).to.deep.equal({ taskId: 't1', tokens: 112 })
    expect(taskTokens(before, [taskRecord('t2'), usage(3, 4)])).to.deep.equal({ taskId: 't2', tokens: 7 })
  })

  describe('enforced before each step', function () {
    this.timeout(30_000)
    const rig = useRig({ once: true, mock: reporting100and10, boot: (mock) => bootBudgetHost(mock, 300) })

    it('past maxTokensPerTask the step is refused with TOKEN_BUDGET_EXHAUSTED and the task pauses with nothing lost', async () => {
      const { session, agent } = await planTask(rig, true)
      // Planning took two steps: 220 tokens.
      await rig.host.ctx.commands.input(session, '/task approve')
      await until(async () => (await rig.host.ctx.supervisor.state(session)).current?.phase === 'paused', 'the pause')
      await agent.whenIdle()
      const events = await session.read({ from: 0, limit: 1000 })
      const refused = events.filter((e) => e.type === 'agent/refused')
      expect(refused.map((e) => e.data.code)).to.deep.equal(['TOKEN_BUDGET_EXHAUSTED'])
      expect(refused[0].data.message).to.match(/used 330 tokens, its budget is 300/)
      const usageEvents = events.filter((e) => e.type === 'model/usage')
      expect(usageEvents).to.have.length(3)
      expect(rig.mock.requests).to.have.length(3)
      const task = (await rig.host.ctx.supervisor.state(session)).current!
      expect(task.plan?.nodes.map((n) => n.id)).to.deep.equal(['a', 'b'])
      expect(task.nodeRuns.a.status).to.equal('running')
      expect(task).to.include({ pauseReason: 'budget', resumePhase: 'active' })
      expect((await rig.host.ctx.supervisor.status(session)).task).to.include({ phase: 'paused', pauseReason: 'budget' })
      // Resuming without more budget is refused, naming the budget: the task stays paused, no request reaches the endpoint.
      const resumed = await rig.host.ctx.commands.input(session, '/task resume')
      expect(resumed?.error?.code).to.equal('TOKEN_BUDGET_EXHAUSTED')
      expect(resumed?.error?.message).to.include(`Task ${task.id} used 330 tokens, its budget is 300 (openai maxTokensPerTask); the task stays paused`)
        .and.to.include('Raise maxTokensPerTask')
      expect(resumed?.error?.details).to.deep.equal({ taskId: task.id, tokens: 330, budget: 300, key: 'maxTokensPerTask' })
      await new Promise((resolve) => setTimeout(resolve, 50))
      await agent.whenIdle()
      expect((await rig.host.ctx.supervisor.state(session)).current).to.deep.equal(task)
      expect(rig.mock.requests).to.have.length(3)
      // Chat to the task paused on its budget spends nothing either: the step is refused, the task stays paused.
      await rig.host.ctx.commands.input(session, 'carry on anyway')
      await until(async () => (await session.read({ from: 0, limit: 1000 })).filter((e) => e.type === 'agent/refused').length === 2, 'the chat\'s refusal')
      await agent.whenIdle()
      expect(rig.mock.requests, 'no request for the chat').to.have.length(3)
      expect((await rig.host.ctx.supervisor.state(session)).current).to.deep.equal(task)

      // Raising maxTokensPerTask (config, then a restart on the same data) makes /task resume work again.
      await rig.host.stop()
      const raised = await bootBudgetHost(rig.mock, 10_000, rig.host.dataDir)
      try {
        const restored = await raised.ctx.sessions.get(session.id)
        const again = await raised.ctx.commands.input(restored, '/task resume')
        expect(again?.error).to.equal(undefined)
        expect((await raised.ctx.supervisor.state(restored)).current).to.include({ phase: 'active', id: task.id })
        await until(() => rig.mock.requests.length > 3, 'a request after the resume')
        await raised.ctx.agents.get(restored.id)?.whenIdle()
      } finally {
        await raised.dispose()
      }
    })
  })

  describe('a live task already past the budget', function () {
    this.timeout(30_000)
    const rig = useRig({ once: true, mock: reporting100and10, boot: (mock) => bootBudgetHost(mock, 200) })

    it('/task resume of a task that is executing (not paused) but past maxTokensPerTask is refused too: nothing is queued', async () => {
      const { session, agent } = await planTask(rig, true)
      await agent.whenIdle()
      // Planning took two steps: 220 tokens of 200. The task executes with nothing driving it, as after a
      // restart (or a turn that ended on the budget's last token): /task resume is what would drive it.
      const active = await rig.host.ctx.supervisor.apply(session, (task: any, at: any) => approve(task, at))
      expect(active.phase).to.equal('active')
      expect(rig.mock.requests).to.have.length(2)
      const resumed = await rig.host.ctx.commands.input(session, '/task resume')
      expect(resumed?.error?.code, JSON.stringify(resumed)).to.equal('TOKEN_BUDGET_EXHAUSTED')
      expect(resumed?.error?.message).to.include(`Task ${active.id} used 220 tokens, its budget is 200 (openai maxTokensPerTask)`)
      await new Promise((resolve) => setTimeout(resolve, 50))
      await agent.whenIdle()
      expect(rig.mock.requests, 'no step ran').to.have.length(2)
      const events = await session.read({ from: 0, limit: 1000 })
      expect(events.filter((e) => e.type === 'agent/refused'), 'no step was even tried').to.have.length(0)
      expect((await rig.host.ctx.supervisor.state(session)).current).to.deep.equal(active)

      // A sub-agent a consultation started works for the same task: its step is refused too.
      const consultation = await rig.host.ctx.sessions.create({ cwd: rig.cwd, role: 'consultation', parentId: session.id })
      const child = await rig.host.ctx.agents.create({ cwd: rig.cwd, model: 'scripted', role: 'subagent', parentId: consultation.id })
      rig.host.scripted.script('subagent', [{ text: 'spent' }])
      child.followup('work')
      await child.whenIdle()
      const childLog = await child.session.read({ from: 0, limit: 100 })
      expect(childLog.filter((e) => e.type === 'agent/refused').map((e) => e.data.code)).to.deep.equal(['TOKEN_BUDGET_EXHAUSTED'])
      expect(childLog.filter((e) => e.type === 'assistant/message')).to.have.length(0)
    })
  })

  describe('an endpoint that reports no usage', function () {
    this.timeout(30_000)
    const rig = useRig({
      once: true,
      mock: (mock) => {
        const player = taskPlayer()
        // Like some vLLM or Ollama builds: `stream_options.include_usage` is ignored, no usage chunk comes.
        mock.fallback = async (request) => ({ ...await player(request) as any, usage: false })
      },
      boot: (mock) => bootBudgetHost(mock, 300),
    })

    it('still counts against maxTokensPerTask: each step records an estimate (marked), and the budget refuses the next step', async () => {
      const { session, agent } = await planTask(rig, false)
      const refusals = async () => (await session.read({ from: 0, limit: 1000 })).filter((e) => e.type === 'agent/refused').map((e) => e.data.code)
      await until(async () => (await refusals()).length > 0, 'a budget refusal', 5000)
      await agent.whenIdle()
      expect(await refusals()).to.deep.equal(['TOKEN_BUDGET_EXHAUSTED'])
      // One step's estimate (instructions, tools, task state) is past 300 tokens: the second is refused.
      expect(rig.mock.requests).to.have.length(1)
      const events = await session.read({ from: 0, limit: 1000 })
      const usageEvents = events.filter((e) => e.type === 'model/usage')
      expect(usageEvents.length).to.be.greaterThan(0)
      for (const event of usageEvents) {
        expect(event.data.estimated).to.equal(true)
        expect(event.data.promptTokens).to.be.greaterThan(0)
      }
    })
  })
})

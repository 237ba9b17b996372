import { expect } from 'chai'
import type { Context } from 'cordis'
import type { Agent } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

/** What a turn asks before each step (the agent's own path, private on purpose). */
const askBeforeStep = (agent: Agent) => (agent as unknown as { refusal(): unknown }).refusal()

async function types(agent: Agent) {
  return (await agent.session.read()).map((e) => e.type)
}

describe('host: step guards (agents.stepGuard)', () => {
  let host: TestHost
  let cwd: string
  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'notes.md': 'hello\n' })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('a synchronous refusal stops the turn before the model runs and drops the queue', async () => {
    host.scripted.script('main', [{ text: 'step one', toolCalls: [{ name: 'glob', args: {} }] }, { text: 'must not run' }, { text: 'queued, must not run' }])
    let steps = 0
    host.ctx.agents.stepGuard(() => {
      if (++steps > 1) return new TaskwardError('SUPERVISOR_DISABLED', 'The supervisor stopped this task.')
    })
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('go')
    agent.followup('queued')
    await agent.whenIdle()
    const events = await agent.session.read()
    expect(events.map((e) => e.type)).to.deep.equal(['user/message', 'assistant/message', 'tool/call', 'tool/result', 'agent/refused'])
    expect(events[4].data).to.deep.equal({ code: 'SUPERVISOR_DISABLED', message: 'The supervisor stopped this task.' })
    expect(host.scripted.served.map((s) => s.input)).to.deep.equal(['go'])
  })

  it('an asynchronous refusal, a rejected promise and a thrown error refuse the same way', async () => {
    const answers: (() => unknown)[] = [
      () => Promise.resolve(new TaskwardError('BUDGET_EXHAUSTED', 'No retries left.')),
      () => Promise.reject(new TaskwardError('LEASE_LOST', 'Another host drives this session.')),
      () => { throw new TaskwardError('STORE_UNAVAILABLE', 'The store is down.') },
    ]
    let answer = answers[0]
    host.ctx.agents.stepGuard(() => answer() as any)
    for (const [i, code] of ['BUDGET_EXHAUSTED', 'LEASE_LOST', 'STORE_UNAVAILABLE'].entries()) {
      answer = answers[i]
      host.scripted.reset()
      host.scripted.script('main', [{ text: 'never' }])
      const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
      agent.followup('go')
      await agent.whenIdle()
      const events = await agent.session.read()
      expect(events.map((e) => e.type)).to.deep.equal(['user/message', 'agent/refused'])
      expect(events[1].data.code).to.equal(code)
      expect(host.scripted.served).to.deep.equal([])
    }
  })

  it('asks guards in registration order, then agent/before-step listeners; the first refusal wins', async () => {
    const asked: string[] = []
    host.ctx.agents.stepGuard(() => { asked.push('first guard') })
    host.ctx.agents.stepGuard(async () => { asked.push('second guard (async)') })
    host.ctx.on('agent/before-step', () => {
      asked.push('listener')
      return new TaskwardError('SUPERVISOR_DISABLED', 'A listener refused.')
    })
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    expect(await askBeforeStep(agent)).to.have.property('code', 'SUPERVISOR_DISABLED')
    expect(asked).to.deep.equal(['first guard', 'second guard (async)', 'listener'])

    asked.length = 0
    host.ctx.agents.stepGuard(() => { asked.push('third guard'); return new TaskwardError('FORBIDDEN', 'A guard refused.') })
    expect(await askBeforeStep(agent)).to.have.property('code', 'FORBIDDEN')
    expect(asked).to.deep.equal(['first guard', 'second guard (async)', 'third guard'])
  })

  it('answers without a promise when every guard answers synchronously and nobody listens to the event', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    host.ctx.agents.stepGuard(() => undefined)
    expect(askBeforeStep(agent)).to.equal(undefined)
    const stop = host.ctx.on('agent/before-step', () => undefined)
    expect(askBeforeStep(agent)).to.be.instanceOf(Promise)
    stop()
    expect(askBeforeStep(agent)).to.equal(undefined)
  })

  it('disposing the plugin that registered a guard removes it', async () => {
    const plugin = {
      name: 'refuses-everything',
      inject: ['agents'],
      apply(ctx: Context) {
        ctx.agents.stepGuard(() => new TaskwardError('FORBIDDEN', 'Nothing runs while this plugin is loaded.'))
      },
    }
    const fork = host.ctx.plugin(plugin)
    host.scripted.script('main', [{ text: 'after the plugin left' }])
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('blocked')
    await agent.whenIdle()
    expect(await types(agent)).to.deep.equal(['user/message', 'agent/refused'])

    fork.dispose()
    agent.followup('runs')
    await agent.whenIdle()
    expect((await types(agent)).slice(2)).to.deep.equal(['user/message', 'assistant/message'])
  })
})

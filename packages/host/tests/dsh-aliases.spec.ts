import { expect } from 'chai'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

/*
 * DSH's published names, kept working beside the host's own: `agent/pre-step` (= `agent/before-step`),
 * the `tools/pre-execute` waterfall (= `tools.guard`) and a projection's `stateVersion` (= `version`).
 */
describe('host: DSH names as aliases', () => {
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

  it('agent/pre-step refuses a step like agent/before-step: the model never runs, the refusal is recorded', async () => {
    host.scripted.script('main', [{ text: 'must not run' }])
    host.ctx.on('agent/pre-step', () => new TaskwardError('SUPERVISOR_DISABLED', 'Paused by a DSH-style plugin.'))
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('go')
    await agent.whenIdle()
    const events = await agent.session.read()
    expect(events.map((e) => e.type)).to.deep.equal(['user/message', 'agent/refused'])
    expect(events[1].data).to.include({ code: 'SUPERVISOR_DISABLED' })
    expect(host.scripted.served).to.have.length(0)
  })

  it('tools/pre-execute denies a call with its code and details; the tool body never runs; allow lets it run', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    let ran = 0
    host.ctx.tools.register({ name: 'probe', description: 'counts calls', execute: () => ++ran })
    host.ctx.on('tools/pre-execute', (call) => call.name === 'probe' && (call.args as any)?.deny
      ? { deny: { code: 'acme_alias.denied', message: 'Denied by the waterfall.', details: { why: 'test' } } }
      : { allow: true })
    const denied = await host.ctx.tools.execute(session, 'probe', { deny: true })
    expect(denied.error).to.deep.include({ code: 'acme_alias.denied', message: 'Denied by the waterfall.' })
    expect(denied.error?.details).to.deep.equal({ why: 'test' })
    expect(ran).to.equal(0)
    const allowed = await host.ctx.tools.execute(session, 'probe', {})
    expect(allowed.result).to.equal(1)
  })

  it('a projection registered with stateVersion folds and caches like one with version; two different versions are refused', async () => {
    host.ctx.projections.register({ key: 'alias-count', stateVersion: 3, init: () => 0, apply: (n: number) => n + 1 })
    const session = await host.ctx.sessions.create({ cwd })
    await session.append('test/a', {})
    await session.append('test/b', {})
    expect(await host.ctx.projections.get(session, 'alias-count')).to.equal(2)
    expect(() => host.ctx.projections.register({ key: 'alias-bad', stateVersion: 2, version: 1, init: () => 0, apply: (n: number) => n }))
      .to.throw().with.property('code', 'CONFIG_INVALID')
  })
})

import { expect } from 'chai'
import type { Agent, TurnSummary } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { gate, registerHoldingTool } from './gates'

const tick = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms))

/** Wait (bounded) until `check` holds; for states reached asynchronously. */
async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 200; i++) {
    if (check()) return
    await tick(5)
  }
  throw new Error(`timed out waiting for ${what}`)
}

async function types(agent: Agent) {
  return (await agent.session.read({ from: 0, limit: 1000 })).map((e) => e.type)
}

describe('host: agents', () => {
  let host: TestHost
  let cwd: string
  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'notes.md': 'hello notes\n' })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('a call with invalidArgs is recorded and refused with TOOL_INVALID_ARGS; nothing runs and the model sees it next step', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted', role: 'main' })
    let seen: any[] = []
    host.scripted.script('main', [
      { toolCalls: [{ name: 'write', id: 'call_x1', invalidArgs: 'the arguments are not valid JSON' }] },
      ({ results }) => {
        seen = results
        return { text: 'ok' }
      },
    ])
    agent.followup('write')
    await tick(0)
    await agent.whenIdle()
    const events = await agent.session.read({ from: 0, limit: 100 })
    const call = events.find((e) => e.type === 'tool/call')!
    expect(call.data).to.include({ name: 'write', invalidArgs: 'the arguments are not valid JSON', modelCallId: 'call_x1' })
    expect(call.data.args).to.deep.equal({})
    expect(seen).to.have.length(1)
    expect(seen[0].error.code).to.equal('TOOL_INVALID_ARGS')
    expect(seen[0].modelCallId).to.equal('call_x1')
    expect(events.filter((e) => e.type === 'tool/result').map((e) => e.data.error?.code)).to.deep.equal(['TOOL_INVALID_ARGS'])
  })

  it('a cancel that interrupts the model request ends the turn cancelled, with no agent/error', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted', role: 'main' })
    let summary: TurnSummary | undefined
    host.ctx.on('agent/turn-end', (_, s) => { summary = s })
    const started = gate()
    host.scripted.script('main', [({ signal }) => {
      started.open()
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new TaskwardError('MODEL_UNAVAILABLE', 'aborted'))))
    }])
    agent.followup('hang')
    await started.opened
    agent.cancel()
    await until(() => !!summary, 'the turn to end')
    expect(summary!.cancelled).to.equal(true)
    expect(summary!.error).to.equal(undefined)
    expect(await types(agent)).to.not.include('agent/error')
  })

  it('a cancel during a tool call runs none of the step\'s remaining calls and asks the model nothing more', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted', role: 'main' })
    let summary: TurnSummary | undefined
    host.ctx.on('agent/turn-end', (_, s) => { summary = s })
    const { entered, release } = registerHoldingTool(host, 'slow_step', { done: true })
    host.scripted.script('main', [
      { toolCalls: [{ name: 'slow_step', args: {} }, { name: 'write', args: { path: 'after-stop.txt', content: 'should not exist' } }] },
      { text: 'a step after the stop' },
    ])
    agent.followup('go')
    await entered.opened
    agent.cancel()
    release.open()
    await until(() => !!summary, 'the turn to end')
    expect(summary!.cancelled).to.equal(true)
    expect(summary!.toolCalls).to.deep.equal(['slow_step'])
    const calls = (await agent.session.read({ from: 0, limit: 1000 })).filter((e) => e.type === 'tool/call').map((e) => e.data.name)
    expect(calls).to.deep.equal(['slow_step'])
    expect(await import('node:fs/promises').then((fs) => fs.stat(`${cwd}/after-stop.txt`).then(() => true, () => false))).to.equal(false)
    expect(host.scripted.pending('main')).to.equal(1)
    host.scripted.reset('main')
  })

  it('a model answer that arrives after a cancel is recorded, but its tool calls never run', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted', role: 'main' })
    let summary: TurnSummary | undefined
    host.ctx.on('agent/turn-end', (_, s) => { summary = s })
    const started = gate()
    const release = gate()
    // A model that ignores the abort signal and answers anyway once released.
    host.scripted.script('main', [async () => {
      started.open()
      await release.opened
      return { text: 'writing now', toolCalls: [{ name: 'write', args: { path: 'late.txt', content: 'late' } }] }
    }])
    agent.followup('go')
    await started.opened
    agent.cancel()
    release.open()
    await until(() => !!summary, 'the turn to end')
    expect(summary!.cancelled).to.equal(true)
    expect(await types(agent)).to.not.include('tool/call')
    expect(await import('node:fs/promises').then((fs) => fs.stat(`${cwd}/late.txt`).then(() => true, () => false))).to.equal(false)
  })

  it('runs a scripted turn: text becomes assistant/message, tool calls become tool/call + tool/result', async () => {
    host.scripted.script('main', [
      { text: 'Let me look.', toolCalls: [{ name: 'read', args: { path: 'notes.md' } }] },
      (request) => ({ text: `It says: ${request.results[0].result.content.trim()}` }),
    ])
    const summaries: TurnSummary[] = []
    host.ctx.on('agent/turn-end', (_, summary) => { summaries.push(summary) })
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    expect(agent.state).to.equal('idle')
    agent.followup('read the notes')
    await agent.whenIdle()
    const events = await agent.session.read()
    expect(events.map((e) => e.type)).to.deep.equal(['user/message', 'assistant/message', 'tool/call', 'tool/result', 'assistant/message'])
    expect(events[0].data).to.deep.include({ text: 'read the notes' })
    expect(events[1].data).to.deep.equal({ text: 'Let me look.' })
    expect(events[2].data).to.deep.include({ name: 'read', args: { path: 'notes.md' } })
    expect(events[3].data.result).to.deep.equal({ path: 'notes.md', content: 'hello notes\n' })
    expect(events[4].data).to.deep.equal({ text: 'It says: hello notes' })
    expect(summaries).to.have.length(1)
    expect(summaries[0]).to.deep.include({ steps: 2, toolCalls: ['read'] })
    expect(host.scripted.pending('main')).to.equal(0)
  })

  it('ends a turn doing nothing when the script is empty', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('anything?')
    await agent.whenIdle()
    expect(await types(agent)).to.deep.equal(['user/message'])
  })

  it('runMaintenance waits for the running turn, and no turn starts until it resolves', async () => {
    const markers: string[] = []
    const stepGate = gate()
    const windowGate = gate()
    host.scripted.script('main', [
      async () => {
        markers.push('first step starts')
        await stepGate.opened
        markers.push('first step ends')
        return { text: 'first' }
      },
      () => {
        markers.push('second turn steps')
        return { text: 'second' }
      },
    ])
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('first')
    await until(() => markers.includes('first step starts'), 'the first step')
    expect(agent.state).to.equal('running')

    const window = agent.runMaintenance(async () => {
      markers.push(`window opens in state ${agent.state}`)
      await agent.session.append('test/maintenance', {})
      // Queued while the window is open: must wait for it.
      agent.followup('second')
      await windowGate.opened
      markers.push('window closes')
      return 'done'
    })
    await tick()
    expect(markers).to.deep.equal(['first step starts'])

    stepGate.open()
    await until(() => markers.some((m) => m.startsWith('window opens')), 'the maintenance window')
    await tick()
    expect(agent.state).to.equal('maintenance')
    expect(markers).to.not.include('second turn steps')

    windowGate.open()
    expect(await window).to.equal('done')
    await agent.whenIdle()
    expect(markers).to.deep.equal([
      'first step starts',
      'first step ends',
      'window opens in state maintenance',
      'window closes',
      'second turn steps',
    ])
    const events = await agent.session.read()
    const seqOf = (type: string, text?: string) => events.find((e) => e.type === type && (text === undefined || e.data?.text === text))!.seq
    expect(seqOf('assistant/message', 'first')).to.be.lessThan(seqOf('test/maintenance'))
    expect(seqOf('test/maintenance')).to.be.lessThan(seqOf('user/message', 'second'))
  })

  it('lets a maintenance window that fails release the agent', async () => {
    host.scripted.script('main', [{ text: 'after' }])
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    const failed = agent.runMaintenance(() => { throw new TaskwardError('ARTIFACT_CHANGED', 'changed') })
    agent.followup('next')
    await failed.then(() => expect.fail('should reject'), (error) => expect(error.code).to.equal('ARTIFACT_CHANGED'))
    await agent.whenIdle()
    expect(await types(agent)).to.deep.equal(['user/message', 'assistant/message'])
  })

  it('whenIdle resolves only after every queued turn has finished', async () => {
    const held = gate()
    host.scripted.script('main', [
      async () => { await held.opened; return { text: 'one' } },
      { text: 'two' },
      { text: 'three' },
    ])
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('1')
    agent.followup('2')
    agent.followup('3')
    let idle = false
    const waiting = agent.whenIdle().then(() => { idle = true })
    await tick()
    expect(idle).to.equal(false)
    held.open()
    await waiting
    expect(agent.state).to.equal('idle')
    expect(agent.queued).to.equal(0)
    const texts = (await agent.session.read()).filter((e) => e.type === 'assistant/message').map((e) => e.data.text)
    expect(texts).to.deep.equal(['one', 'two', 'three'])
  })

  it('stops the turn and drops the queue when agent/before-step refuses, recording agent/refused', async () => {
    host.scripted.script('main', [
      { text: 'step one', toolCalls: [{ name: 'glob', args: {} }] },
      { text: 'step two must not happen' },
      { text: 'queued turn must not happen' },
    ])
    let steps = 0
    host.ctx.on('agent/before-step', () => {
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
    expect(agent.queued).to.equal(0)
  })

  it('treats a thrown refusal from agent/before-step the same way', async () => {
    host.scripted.script('main', [{ text: 'never' }])
    host.ctx.on('agent/before-step', () => { throw new TaskwardError('BUDGET_EXHAUSTED', 'No retries left.') })
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('go')
    await agent.whenIdle()
    const events = await agent.session.read()
    expect(events.map((e) => e.type)).to.deep.equal(['user/message', 'agent/refused'])
    expect(events[1].data.code).to.equal('BUDGET_EXHAUSTED')
    expect(host.scripted.served).to.deep.equal([])
  })

  it('rejects agents.resume with the code of an agent/before-resume refusal', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    const other = await host.ctx.agents.create({ cwd, model: 'scripted' })
    host.ctx.on('agent/before-resume', (session) => {
      if (session.id === agent.id) return new TaskwardError('SUPERVISOR_POISONED', 'Repair the records first.')
    })
    await host.ctx.agents.resume(agent.id).then(() => expect.fail('should refuse'), (error) => {
      expect(error).to.be.instanceOf(TaskwardError)
      expect(error.code).to.equal('SUPERVISOR_POISONED')
    })
    expect(await host.ctx.agents.resume(other.id)).to.equal(other)
  })

  it('rejects agents.resume when a before-resume listener throws', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    host.ctx.on('agent/before-resume', () => { throw new TaskwardError('READER_UNAVAILABLE', 'Load the admission plugin.') })
    await host.ctx.agents.resume(agent.id).then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('READER_UNAVAILABLE'))
  })

  it('after a restart the agent is gone until resumed, comes back idle and runs nothing until a followup', async () => {
    host.scripted.script('main', [{ text: 'before restart' }])
    const created = await host.ctx.agents.create({ cwd, model: 'scripted', role: 'main' })
    created.followup('first')
    await created.whenIdle()
    const before = await types(created)

    await host.restart()
    expect(host.ctx.agents.get(created.id)).to.equal(undefined)
    host.scripted.script('main', [{ text: 'after restart' }])
    const agent = await host.ctx.agents.resume(created.id)
    expect(agent.state).to.equal('idle')
    expect(agent.model).to.equal('scripted')
    expect(agent.role).to.equal('main')
    await tick(50)
    expect(host.scripted.served).to.deep.equal([])
    expect(host.scripted.pending('main')).to.equal(1)
    expect(await types(agent)).to.deep.equal(before)

    agent.followup('second')
    await agent.whenIdle()
    expect(host.scripted.served.map((s) => s.input)).to.deep.equal(['second'])
    expect((await agent.session.read()).at(-1)!.data).to.deep.equal({ text: 'after restart' })
  })

  it('refuses to resume a session that never had an agent, and a second agent for a session', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    await host.ctx.agents.resume(session.id).then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('BAD_REQUEST'))
    await host.ctx.agents.resume('missing').then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('SESSION_NOT_FOUND'))
    await host.ctx.agents.create({ sessionId: session.id, model: 'scripted' })
    await host.ctx.agents.create({ sessionId: session.id, model: 'scripted' }).then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('AGENT_BUSY'))
    await host.ctx.agents.create({ cwd, model: 'no-such-model' }).then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('MODEL_NOT_FOUND'))
  })

  it('never gives one session two agents, even when create and create race', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    const results = await Promise.allSettled([
      host.ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' }),
      host.ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' }),
    ])
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1)
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    expect(refused.reason.code).to.equal('AGENT_BUSY')
    expect(host.ctx.agents.list().filter((a) => a.id === session.id)).to.have.length(1)
  })

  it('cancel drops queued turns', async () => {
    const held = gate()
    host.scripted.script('main', [async () => { await held.opened; return { text: 'one' } }, { text: 'two' }])
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    agent.followup('1')
    agent.followup('2')
    // Wait for the model step itself: a cancel before it would (rightly) skip the model altogether.
    await until(() => host.scripted.served.length === 1, 'the first turn to reach the model')
    agent.cancel()
    held.open()
    await agent.whenIdle()
    await tick()
    expect(host.scripted.served.map((s) => s.input)).to.deep.equal(['1'])
  })
})

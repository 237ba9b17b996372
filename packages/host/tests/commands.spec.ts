import { expect } from 'chai'
import type { Context } from 'cordis'
import type { CommandInvocation } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

describe('host: commands', () => {
  let host: TestHost
  let cwd: string
  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace()
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('records the user/message and the command/reply of a registered command', async () => {
    const calls: Omit<CommandInvocation, 'session'>[] = []
    host.ctx.commands.register('echo', ({ session: _, ...rest }) => {
      calls.push(rest)
      return { echoed: rest.args }
    })
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    const reply = await host.ctx.commands.input(agent.session, '/echo hi  there ')
    const events = await agent.session.read()
    expect(events.map((e) => e.type)).to.deep.equal(['user/message', 'command/reply'])
    expect(events[0].data).to.deep.include({ text: '/echo hi  there ' })
    expect(events[1].data).to.deep.equal({ command: 'echo', replyTo: events[0].seq, reply: { echoed: 'hi  there' } })
    expect(reply).to.deep.equal(events[1].data)
    expect(calls).to.deep.equal([{ args: 'hi  there', text: '/echo hi  there ', seq: events[0].seq }])
    // A command is not a turn: the model is never asked.
    await agent.whenIdle()
    expect(host.scripted.served).to.deep.equal([])
  })

  it('answers an unknown command with COMMAND_NOT_FOUND in the recorded reply', async () => {
    host.ctx.commands.register('echo', () => 'ok')
    const session = await host.ctx.sessions.create({ cwd })
    const reply = await host.ctx.commands.input(session, '/nope now')
    expect(reply?.error?.code).to.equal('COMMAND_NOT_FOUND')
    expect(reply?.error?.message).to.include('/echo')
    const [message, recorded] = await session.read()
    expect(message.type).to.equal('user/message')
    expect(recorded).to.deep.include({ type: 'command/reply' })
    expect(recorded.data).to.deep.include({ command: 'nope', replyTo: message.seq })
    expect(recorded.data.error.code).to.equal('COMMAND_NOT_FOUND')
  })

  it('records a coded handler refusal as the reply error', async () => {
    host.ctx.commands.register('task', () => { throw new TaskwardError('ACTIVE_TASK_CONFLICT', 'Another task is active.') })
    const session = await host.ctx.sessions.create({ cwd })
    const reply = await host.ctx.commands.input(session, '/task new x')
    expect(reply?.error).to.deep.equal({ code: 'ACTIVE_TASK_CONFLICT', message: 'Another task is active.' })
    expect((await session.read()).at(-1)!.data.error.code).to.equal('ACTIVE_TASK_CONFLICT')
  })

  it('sends a message that is not a command to the agent as a turn, recorded once', async () => {
    host.scripted.script('main', [{ text: 'hello back' }])
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    expect(await host.ctx.commands.input(agent.session, 'hello agent')).to.equal(undefined)
    await agent.whenIdle()
    const events = await agent.session.read()
    expect(events.map((e) => [e.type, e.data.text])).to.deep.equal([['user/message', 'hello agent'], ['assistant/message', 'hello back']])
    expect(host.scripted.served.map((s) => s.input)).to.deep.equal(['hello agent'])
  })

  it('refuses a chat message for a session without an agent, and empty input', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    await host.ctx.commands.input(session, 'hi').then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('NOT_FOUND'))
    await host.ctx.commands.input(session, '   ').then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('BAD_REQUEST'))
    expect(await session.read()).to.deep.equal([])
  })

  it('removes a command when the plugin that registered it is disposed', async () => {
    const owner = host.ctx.plugin({
      name: 'test-command-owner',
      inject: ['commands'],
      apply: (ctx: Context) => { ctx.commands.register('owned', () => 'mine') },
    })
    const session = await host.ctx.sessions.create({ cwd })
    expect((await host.ctx.commands.input(session, '/owned'))?.reply).to.equal('mine')
    owner.dispose()
    expect((await host.ctx.commands.input(session, '/owned'))?.error?.code).to.equal('COMMAND_NOT_FOUND')
  })
})

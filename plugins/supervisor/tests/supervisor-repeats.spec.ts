import { expect } from 'chai'
import type { Agent, Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import { approvedTask, bootSupervisor, command, ok, supervisorOf, turn, until, workspace } from './fixtures'
import { READ_BACK } from '../src/repeats'

const read = { name: 'read', args: { path: 'README.md' } }

describe('supervisor: repeated tool calls', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  let agent: Agent

  async function boot(config: Record<string, unknown> = {}) {
    host = await bootSupervisor({ automaticContinuation: false, ...config })
    cwd = await workspace()
    ;({ session, agent } = await supervisorOf(host).startSession({ cwd }))
  }
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  /** Where the guard read the session's log back from (its reads of READ_BACK events), from now on. */
  const readBacksOf = (session: Session) => {
    const readBacks: number[] = []
    const readLog = session.read.bind(session)
    session.read = (options) => {
      if (options?.limit === READ_BACK) readBacks.push(options.from ?? 0)
      return readLog(options)
    }
    return readBacks
  }

  const results = async () => (await session.read({ from: 0, limit: 10_000 }))
    .filter((e) => e.type === 'tool/result' && e.data.name === 'read').map((e) => e.data.error?.code ?? 'ok')

  it('answers the 4th identical call TOOL_REPEATED, and on the 5th ends the turn and pauses the task (loop)', async () => {
    await boot()
    await approvedTask(host, session)
    // A model that reads the same file forever, one call a step (the loop).
    host.scripted.script('main', Array.from({ length: 12 }, () => ({ toolCalls: [read] })))
    agent.followup('build node a', { origin: 'controller' })
    await until(async () => (await supervisorOf(host).state(session)).current!.phase === 'paused', 'the pause')
    await agent.whenIdle()
    expect(await results()).to.deep.equal(['ok', 'ok', 'ok', 'TOOL_REPEATED', 'TOOL_REPEATED'])
    const events = await session.read({ from: 0, limit: 10_000 })
    const [first, second] = events.filter((e) => e.type === 'tool/result' && e.data.error?.code === 'TOOL_REPEATED')
    // The model is told what to do: use the result above or change the arguments.
    expect(first.data.error.message).to.match(/3 times in a row/).and.match(/Use the result above, or change the arguments/)
    expect(second.data.error.details).to.include({ loop: true })
    const task = (await supervisorOf(host).state(session)).current!
    expect(task).to.include({ phase: 'paused', pauseReason: 'loop', resumePhase: 'active' })
    // The turn ended there: the rest of the script was not played.
    expect(host.scripted.pending('main')).to.equal(7)
    // /task status says why.
    const status = await command(host, session, '/task status')
    expect(JSON.stringify(status)).to.include('"pauseReason":"loop"')
  })

  it('follows a session born here from its first event: its turns read none of its log back', async () => {
    await boot()
    const readBacks = readBacksOf(session)
    await approvedTask(host, session)
    host.scripted.script('main', Array.from({ length: 6 }, () => ({ toolCalls: [read] })))
    agent.followup('build node a', { origin: 'controller' })
    await until(async () => (await supervisorOf(host).state(session)).current!.phase === 'paused', 'the pause')
    await agent.whenIdle()
    expect(await results()).to.deep.equal(['ok', 'ok', 'ok', 'TOOL_REPEATED', 'TOOL_REPEATED'])
    expect(readBacks).to.deep.equal([])
  })

  it('reads nothing back for a session whose first event is its first turn\'s message', async () => {
    await boot()
    const readBacks = readBacksOf(session)
    host.scripted.script('main', [...turn([read], [read], [read], [read])])
    agent.followup('hello', { origin: 'user' })
    await agent.whenIdle()
    expect(await results()).to.deep.equal(['ok', 'ok', 'ok', 'TOOL_REPEATED'])
    expect(readBacks, 'found by a stranger review: the first turn read the (empty) log back').to.deep.equal([])
  })

  it('another call, or a different result, breaks the row; a limit of 0 turns it off', async () => {
    await boot({ repeatedCallLimit: 2 })
    await approvedTask(host, session)
    host.scripted.script('main', turn([read], [read], [{ name: 'glob', args: {} }], [read], [read], [read]))
    agent.followup('go', { origin: 'controller' })
    await agent.whenIdle()
    // Two alike, a glob, two alike again, then the third is refused.
    expect(await results()).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'TOOL_REPEATED'])
    await host.dispose()
    await removeTree(cwd)
    await boot({ repeatedCallLimit: 0 })
    await approvedTask(host, session)
    host.scripted.script('main', turn(...Array.from({ length: 6 }, () => [read])))
    agent.followup('go', { origin: 'controller' })
    await agent.whenIdle()
    expect(await results()).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'ok', 'ok'])
  })

  it('counts arguments alike whatever the order of their keys, and counts on after a restart from the log', async () => {
    await boot()
    await approvedTask(host, session)
    const grep = (args: Record<string, unknown>) => [{ name: 'grep', args }]
    host.scripted.script('main', turn(grep({ pattern: 'parser', include: '**/*.md' }), grep({ include: '**/*.md', pattern: 'parser' })))
    agent.followup('go', { origin: 'controller' })
    await agent.whenIdle()
    await host.restart()
    session = await host.ctx.sessions.get(session.id)
    agent = await host.ctx.agents.resume(session.id)
    host.scripted.script('main', turn(grep({ pattern: 'parser', include: '**/*.md' }), grep({ pattern: 'parser', include: '**/*.md' })))
    agent.followup('go on', { origin: 'controller' })
    await agent.whenIdle()
    const codes = (await session.read({ from: 0, limit: 10_000 })).filter((e) => e.type === 'tool/result' && e.data.name === 'grep').map((e) => e.data.error?.code ?? 'ok')
    expect(codes).to.deep.equal(['ok', 'ok', 'ok', 'TOOL_REPEATED'])
  })

  it('a person\'s message starts the row again', async () => {
    await boot()
    await approvedTask(host, session)
    host.scripted.script('main', [...turn([read], [read], [read]), ...turn([read], [read])])
    agent.followup('go', { origin: 'controller' })
    await agent.whenIdle()
    agent.followup('please look again')
    await agent.whenIdle()
    expect(await results()).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'ok'])
  })

  it('a reviewer that pages the same log again and again is stopped too: its review fails and the task pauses (review-fault)', async () => {
    await boot()
    await approvedTask(host, session)
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
    const page = { toolCalls: [{ name: 'review_read_log', args: { from: 0, limit: 50 } }] }
    host.scripted.script('reviewer', Array.from({ length: 8 }, () => page))
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await until(async () => (await supervisorOf(host).state(session)).current!.phase === 'paused', 'the pause')
    const task = (await supervisorOf(host).state(session)).current!
    expect(task.pauseReason).to.equal('review-fault')
    // Three pages alike, TOOL_REPEATED, then the turn was stopped: the rest of the script was not played.
    expect(host.scripted.pending('reviewer')).to.equal(3)
  })
})

import { expect } from 'chai'
import { SUPERVISOR_PROJECTION_KEY } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace, waitFor } from '@taskward/testkit'
import { SupervisorPlugin } from '../src'
import { supervisorOf } from './fixtures'

/*
 * The host keeps the folds of at most `projections.cachedSessions` sessions in memory; the supervisor's
 * own in-memory state of a session (the step guard's synchronous path) is a fold of the same projection
 * and must go with it, or the bound would not hold for the largest state a host keeps.
 */
describe('supervisor: the in-memory state of a session the projections forgot', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    cwd = await tempWorkspace({ 'README.md': '# x\n' })
    host = await TestHost.boot({ host: { projections: { cachedSessions: 2 } }, plugins: [[SupervisorPlugin, {}]], waitFor: ['supervisor'] })
  })

  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('is dropped with the projection caches, and read back from the saved cache', async () => {
    const supervisor = supervisorOf(host)
    const sessions = []
    for (let i = 0; i < 5; i++) {
      const session = await host.ctx.sessions.create({ cwd })
      for (const text of [`/task new objective ${i}`, '/task pause']) {
        const answer = await host.ctx.commands.input(session, text)
        expect(answer?.error, text).to.equal(undefined)
      }
      sessions.push(session)
    }
    await waitFor(() => host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued), { what: 'agents to go idle' })
    await host.ctx.projections.flush()
    const cached = sessions.filter((session) => host.ctx.projections.current(session, SUPERVISOR_PROJECTION_KEY) !== undefined)
    expect(cached).to.have.length(2)
    const mirrored = sessions.filter((session) => supervisor.currentState(session) !== undefined)
    expect(mirrored.map((session) => session.id)).to.have.members(cached.map((session) => session.id))
    // A forgotten session's state reads back whole.
    const forgotten = sessions.find((session) => !cached.includes(session))!
    const task = (await supervisor.state(forgotten)).current!
    expect(task).to.include({ objective: `objective ${sessions.indexOf(forgotten)}`, phase: 'paused' })
    expect(supervisor.currentState(forgotten)?.current?.id).to.equal(task.id)
  })
})

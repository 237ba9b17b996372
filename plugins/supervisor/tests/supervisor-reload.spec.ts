import { expect } from 'chai'
import { original, type Session } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { completedTask, ok, refused, supervisorOf, until, useSupervisedSession } from './fixtures'

/**
 * The supervisor's guards and its log observer are registered through the calling plugin's context,
 * while agents call the tool registry itself (read once, not through cordis' proxy): unloading the
 * supervisor must still take them away, and loading it again must bring them back.
 */
describe('supervisor: unloaded and loaded again', () => {
  let host: TestHost
  let session: Session
  useSupervisedSession((env) => ({ host, session } = env))

  const writeNotes = (registry: { execute: TestHost['ctx']['tools']['execute'] }) =>
    registry.execute(session, 'write', { path: 'notes.md', content: 'after completion\n' }, { agentId: session.id })

  it('stops guarding tools once unloaded and guards them again once reloaded, also on the path agents take', async () => {
    await completedTask(host, session)
    const registry = original(host.ctx.tools)
    const observers = host.ctx.sessions.observerCount()
    await refused(host, session, 'write', { path: 'notes.md', content: 'x' }, 'REPAIR_CONFIRMATION_REQUIRED')
    expect((await writeNotes(registry)).error?.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')

    ;(host.ctx as any).registry.get(SupervisorPlugin).dispose()
    await until(() => !host.ctx.get('supervisor'), 'the supervisor to go away')
    expect(host.ctx.sessions.observerCount()).to.be.lessThan(observers)
    expect((await writeNotes(registry)).error).to.equal(undefined)
    await ok(host, session, 'write', { path: 'notes.md', content: 'unsupervised\n' })

    host.ctx.plugin(SupervisorPlugin, { automaticContinuation: false })
    await until(() => !!host.ctx.get('supervisor'), 'the supervisor to come back')
    expect(host.ctx.sessions.observerCount()).to.equal(observers)
    // The task is still complete in the log: the new supervisor folds it and refuses again, on both paths.
    expect((await writeNotes(registry)).error?.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')
    await refused(host, session, 'write', { path: 'notes.md', content: 'x' }, 'REPAIR_CONFIRMATION_REQUIRED')
    // Its observer follows the log again: after those appends the state is current in memory.
    expect(supervisorOf(host).currentState(session)?.current?.phase).to.equal('complete')
  })
})

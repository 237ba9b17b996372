import { expect } from 'chai'
import type { Session } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'
import type { TaskTransition } from '../src'
import { command, completedTask, supervisorOf, useSupervisedSession } from './fixtures'

describe('supervisor: supervisor/transition', () => {
  let host: TestHost
  let session: Session
  useSupervisedSession((env) => ({ host, session } = env))

  it('is emitted once per committed task snapshot, in order, after the record is in the log', async () => {
    const seen: { kind: string, revision: number, previous?: number }[] = []
    const durable: Promise<boolean>[] = []
    host.ctx.on('supervisor/transition', (transition: TaskTransition) => {
      seen.push({ kind: transition.kind, revision: transition.next.revision, previous: transition.previous?.revision })
      // The record is already in the log when the listener runs.
      durable.push(transition.session.read({ from: transition.seq, limit: 1 })
        .then(([event]) => event?.data?.payload?.id === transition.next.id && event.data.payload.revision === transition.next.revision))
    })
    const task = await completedTask(host, session)
    await command(host, session, '/task new another one')
    const kinds = seen.map((s) => s.kind)
    expect(kinds.slice(0, 5)).to.deep.equal(['created', 'review-requested', 'reviewed', 'approved', 'node-started'])
    expect(kinds.slice(-2)).to.deep.equal(['completed', 'created'])
    // One event per revision of the first task, contiguous, each with the snapshot before it.
    const first = seen.slice(0, -1)
    expect(first.map((s) => s.revision)).to.deep.equal(Array.from({ length: task.revision }, (_, i) => i + 1))
    expect(first.every((s) => s.previous === (s.revision === 1 ? undefined : s.revision - 1))).to.equal(true)
    expect(await Promise.all(durable)).to.not.include(false)
  })

  it('is not a veto: a throwing or rejecting listener changes nothing and later listeners still run', async () => {
    const kinds: string[] = []
    host.ctx.on('supervisor/transition', () => { throw new Error('listener bug') })
    host.ctx.on('supervisor/transition', async () => { throw new Error('async listener bug') })
    host.ctx.on('supervisor/transition', ({ kind }: TaskTransition) => { kinds.push(kind) })
    await command(host, session, '/task new survive listeners')
    await command(host, session, '/task pause')
    expect(kinds).to.deep.equal(['created', 'paused'])
    expect((await supervisorOf(host).state(session)).current).to.include({ phase: 'paused', revision: 2 })
  })

  it('lets a listener append its own records and call the supervisor without deadlock', async () => {
    host.ctx.on('supervisor/transition', ({ kind, next, session }: TaskTransition) => {
      void session.append('extension/record', {
        namespace: 'audit', schemaVersion: 1, kind: 'entry', recordId: `${next.id}:${next.revision}`, payload: { kind },
      })
      if (kind === 'created') void supervisorOf(host).state(session)
    })
    await command(host, session, '/task new with an audit trail')
    await command(host, session, '/task pause')
    const events = await session.read({ from: 0, limit: 1000 })
    const audit = events.filter((e) => e.type === 'extension/record' && e.data.namespace === 'audit').map((e) => e.data.payload.kind)
    expect(audit).to.deep.equal(['created', 'paused'])
  })

  it('stops reaching a listener once its plugin is disposed', async () => {
    const kinds: string[] = []
    const fork = host.ctx.plugin({ name: 'listener', apply: (ctx) => { ctx.on('supervisor/transition', ({ kind }: TaskTransition) => { kinds.push(kind) }) } })
    await command(host, session, '/task new listened')
    fork.dispose()
    await command(host, session, '/task pause')
    expect(kinds).to.deep.equal(['created'])
  })
})

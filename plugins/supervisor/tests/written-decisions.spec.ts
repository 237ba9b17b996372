import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { holdFlushes, removeTree, type TestHost } from '@taskward/testkit'
import { PLAN, bootSupervisor, scriptReviews, supervisorOf, until, workspace } from './fixtures'

/**
 * A disk slow to flush: from `hold()` on, every wait for durability of the store parks until the
 * returned release is called (then the flushes run as usual).
 */
async function flushGate(host: TestHost, session: Session) {
  // The first write after start waits for the tables' preparation (and its flush) whatever it asks.
  await session.append('test/warm-up', {})
  return () => holdFlushes(host.ctx)
}

describe('supervisor: a decision that only leads to a model request does not wait for the disk', () => {
  let host: TestHost
  let cwd: string
  beforeEach(async () => {
    host = await bootSupervisor()
    cwd = await workspace()
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('plans, reviews and applies the verdict, then starts the approved turn, while no flush ends; each command is answered once durable', async () => {
    const supervisor = supervisorOf(host)
    const { session, agent } = await supervisor.startSession({ cwd })
    const asked: string[] = []
    host.scripted.script('main', [
      () => { asked.push('plan'); return { toolCalls: [{ name: 'task_submit_plan', args: PLAN }] } },
      { text: 'The plan is submitted.' },
      () => { asked.push('after approval'); return { text: 'On it.' } },
    ])
    scriptReviews(host, 'pass')
    const hold = await flushGate(host, session)

    let release = hold()
    let answered = false
    const created = host.ctx.commands.input(session, '/task new parse nested lists').then((reply) => { answered = true; return reply })
    // The command's transition, the main turn, the review job, the reviewer's session and turn, the
    // verdict: all of it runs with the flush held.
    await until(async () => (await supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan reviewed while nothing was flushed')
    expect(asked).to.deep.equal(['plan'])
    const job = (await supervisor.state(session)).reviews.at(-1)!
    expect(job).to.include({ kind: 'plan', status: 'finished', verdict: 'pass' })
    expect(answered, 'the command is not answered before its records are durable').to.equal(false)
    release()
    expect((await created)?.error).to.equal(undefined)
    await agent.whenIdle()

    release = hold()
    answered = false
    const approved = host.ctx.commands.input(session, '/task approve').then((reply) => { answered = true; return reply })
    await until(() => asked.length === 2, 'the approved turn asked its model while nothing was flushed')
    expect((await supervisor.state(session)).current?.phase).to.equal('active')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(answered, '/task approve is answered once durable').to.equal(false)
    release()
    expect((await approved)?.error).to.equal(undefined)
    await agent.whenIdle()
    // Every event is in the log, without a hole, and nothing of it is still waiting for the disk.
    await session.durable()
    expect(session.whenDurable()).to.equal(undefined)
    const stored = await host.ctx.database.get('taskward_event', { sessionId: session.id })
    expect(stored.map((row) => row.seq).sort((a, b) => a - b)).to.deep.equal([...Array(session.seq).keys()])
  })

  it('starts a chat message\'s turn at once and answers its sender once the message is durable', async () => {
    const { session, agent } = await supervisorOf(host).startSession({ cwd })
    let asked = false
    host.scripted.script('main', [() => { asked = true; return { text: 'Hello.' } }])
    const release = (await flushGate(host, session))()
    let answered = false
    const sent = host.ctx.commands.input(session, 'hello').then(() => { answered = true })
    try {
      await until(() => asked, 'the turn asked its model while nothing was flushed')
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(answered).to.equal(false)
    } finally {
      release()
    }
    await sent
    await agent.whenIdle()
  })
})

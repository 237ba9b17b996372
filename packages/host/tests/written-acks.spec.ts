import { expect } from 'chai'
import { renameSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { storeDriver, type Session } from '@taskward/host'
import { TestHost, holdFlushes as holdTheFlushes } from '@taskward/testkit'

const tick = (ms = 50) => new Promise((resolve) => setTimeout(resolve, ms))

/** What a promise has done so far: 'pending', 'resolved', or the code it rejected with. */
function watch(promise: Promise<unknown>) {
  const seen = { state: 'pending' as string }
  promise.then(() => { seen.state = 'resolved' }, (error) => { seen.state = error?.code ?? String(error) })
  return seen
}

describe('host: commits acknowledged once written', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  const holdFlushes = () => holdTheFlushes(host.ctx)
  /** Every fsync of the WAL fails from now on (EIO). */
  function failFlushes() {
    const flusher = (storeDriver(host.ctx) as any).flusher
    flusher.sync = async () => { throw Object.assign(new Error('injected EIO'), { code: 'EIO' }) }
  }
  /** A session whose store has written once (the first write waits for the tables, whatever it asks). */
  async function warm(): Promise<Session> {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('test/warm-up', {})
    return session
  }

  it('resolves a written commit before its flush; durable(), flushed() and whenDurable() wait for the flush', async () => {
    const session = await warm()
    const release = holdFlushes()
    try {
      await session.append('test/decision', {}, { commit: true, ack: 'written' })
      const durable = watch(session.durable())
      const flushed = watch(session.flushed()!)
      const shown = watch(session.whenDurable()!)
      await tick()
      expect([durable.state, flushed.state, shown.state]).to.deep.equal(['pending', 'pending', 'pending'])
    } finally {
      release()
    }
    await session.durable()
    expect(session.flushed()).to.equal(undefined)
    expect(session.whenDurable()).to.equal(undefined)
  })

  it('keeps a failed flush: durable() and flushed() reject, whenDurable() says false, long after it failed', async () => {
    const session = await warm()
    failFlushes()
    await session.append('test/decision', {}, { commit: true, ack: 'written' })
    await tick()
    expect(await session.durable().then(() => 'resolved', (error) => error?.code)).to.equal('STORE_UNAVAILABLE')
    expect(await session.flushed()?.then(() => 'resolved', (error) => error?.code)).to.equal('STORE_UNAVAILABLE')
    expect(await session.whenDurable()).to.equal(false)
  })

  it('keeps a failed flush of a step committed once written', async () => {
    const session = await warm()
    failFlushes()
    session.openStep()
    await session.append('test/step-event', {})
    await session.commitStep({ ack: 'written' })
    await tick()
    expect(await session.durable().then(() => 'resolved', (error) => error?.code)).to.equal('STORE_UNAVAILABLE')
  })

  it('answers a durable append once flushed, and the next append does not queue behind that flush', async () => {
    const session = await warm()
    const release = holdFlushes()
    try {
      const durable = watch(session.append('test/acknowledged', {}))
      session.openStep()
      // Staged behind it in the append order: resolves at once, the flush still held.
      const staged = await session.append('test/staged', {})
      expect(staged.seq).to.equal(2)
      await tick()
      expect(durable.state).to.equal('pending')
      await session.commitStep({ ack: 'written' })
    } finally {
      release()
    }
    await session.durable()
  })

  it('runs a command handler once its command is durable unless it was registered records-only', async () => {
    const session = await warm()
    const driver = storeDriver(host.ctx) as any
    const flushesSeen: Record<string, number> = {}
    host.ctx.commands.register('effect', () => { flushesSeen.effect = driver.writeStats().flushes; return 'done' })
    host.ctx.commands.register('record', () => { flushesSeen.record = driver.writeStats().flushes; return 'done' }, { recordsOnly: true })
    for (const name of ['effect', 'record']) {
      const before = driver.writeStats().flushes
      const release = holdFlushes()
      const reply = watch(host.ctx.commands.input(session, `/${name}`))
      await tick()
      const ranWhileHeld = name in flushesSeen
      expect(reply.state, `/${name} is answered once durable`).to.equal('pending')
      release()
      await tick()
      expect(reply.state).to.equal('resolved')
      if (name === 'effect') {
        expect(ranWhileHeld, 'an effect never comes before its command is durable').to.equal(false)
        expect(flushesSeen.effect).to.be.above(before)
      } else {
        expect(ranWhileHeld, 'a records-only handler runs once its command is written').to.equal(true)
      }
    }
  })

  it('durable() still rejects for a tool/call whose batch an interleaved command commit found refused', async () => {
    const session = await warm()
    const driver = storeDriver(host.ctx) as any
    session.openStep()
    // The agent stages the tool's call; its guards run (async) before `await session.durable()`.
    await session.append('tool/call', { callId: 'c1', name: 'effect', args: {} })
    // Meanwhile the store refuses writes (a move of the data directory, say: no flush of this session failed).
    driver.fail('STORE_UNAVAILABLE', 'injected')
    // An operator's command, committed in the middle of the step, writes the staged batch first: refused.
    const command = await session.append('user/message', { text: '/task status' }, { commit: true, ack: 'written' })
      .then(() => 'resolved', (error) => error?.code)
    expect(command).to.equal('STORE_UNAVAILABLE')
    // The tool's write-ahead barrier: its tool/call is not in the log, so the effect must not run.
    const barrier = await session.durable().then(() => 'resolved', (error) => error?.code)
    expect(barrier, 'durable() before the effect').to.equal('STORE_UNAVAILABLE')
  })

  it('never runs a tool with effects whose tool/call another writer\'s commit found refused (a moved data directory, moved back)', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('test/warm-up', {})
    const driver = storeDriver(host.ctx) as any
    let effectRan = false
    host.ctx.tools.register({ name: 'effect', description: 'Changes something outside the log.', execute: async () => { effectRan = true; return { ok: true } } })
    host.ctx.commands.register('note', () => 'noted', { recordsOnly: true })
    // A guard that takes a moment (recovery's and the repeats guard read the log).
    let openGuard!: () => void
    const guardGate = new Promise<void>((resolve) => { openGuard = resolve })
    host.ctx.tools.guard(async () => { await guardGate })
    session.openStep()
    const call = host.ctx.tools.execute(session, 'effect', {}, { agentId: session.id })
    await new Promise((resolve) => setTimeout(resolve, 20))
    // The data directory is moved away meanwhile; GET /health notices it (writes refused until it is back).
    const moved = host.dataDir + '.moved'
    renameSync(host.dataDir, moved)
    try {
      expect(driver.health().ok).to.equal(false)
      // An operator's command during the step writes the staged tool/call first: refused with the move.
      const command = await host.ctx.commands.input(session, '/note').then(() => 'answered', (error) => error?.code)
      expect(command).to.equal('STORE_UNAVAILABLE')
    } finally {
      renameSync(moved, host.dataDir)
    }
    openGuard()
    const outcome: any = await call
    await session.commitStep().catch(() => {})
    const types = (await session.read({ from: 0, limit: 100 })).map((event) => event.type)
    expect(types, 'the log').to.not.include('tool/call')
    expect({ effectRan, error: outcome.error?.code }, 'an effect never comes before its record').to.deep.equal({ effectRan: false, error: 'STORE_UNAVAILABLE' })
  })
})

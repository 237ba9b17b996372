import { expect } from 'chai'
import type { Context } from 'cordis'
import { storeDriver, type ProjectionDef } from '@taskward/host'
import { saveProjectionCaches, SAVE_CHUNK_ROWS } from '../src/projection-caches'
import type { SessionEvent } from '@taskward/protocol'
import { TestHost } from '@taskward/testkit'
import { tmpdir } from 'node:os'

/** A projection whose state is the events folded, with text that must survive the round trip as is. */
const transcript: ProjectionDef<{ lines: string[], meta: Record<string, unknown> }> = {
  key: 'test-transcript',
  version: 3,
  init: () => ({ lines: [], meta: {} }),
  apply: (state, event: SessionEvent) => ({ lines: [...state.lines, `${event.type}: ${event.data.text}`], meta: { last: event.seq, nested: { ok: true, none: null } } }),
}

const register = (host: TestHost) => host.ctx.plugin({ name: 'test-transcript-owner', inject: ['projections'], apply: (ctx: Context) => { ctx.projections.register(transcript) } })

const rows = (host: TestHost) => host.ctx.database.get('taskward_projection', { key: 'test-transcript' })

describe('host: saving projection caches (the batched save)', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  it('writes every advanced cache of many sessions in one save, read back by minato and by a restarted host as they were', async () => {
    register(host)
    const texts = ['plain', 'quote " and \\ backslash', 'ünïcødé 漢字 🚀', 'line\nbreak', "'; DROP TABLE taskward_projection; --"]
    const sessions = []
    for (let i = 0; i < 300; i++) {
      const session = await host.ctx.sessions.create({ cwd: tmpdir() })
      await session.append('said', { text: texts[i % texts.length] })
      await host.ctx.projections.get(session, 'test-transcript')
      sessions.push(session)
    }
    // Advanced by the appends (unsaved until the batched save), then saved in one write: the update path.
    for (const [i, session] of sessions.entries()) await session.append('again', { text: `${i}` })
    await host.ctx.projections.flush()
    const saved = new Map((await rows(host)).map((row) => [row.sessionId, row]))
    expect(saved.size).to.equal(300)
    for (const [i, session] of sessions.entries()) {
      const row = saved.get(session.id)!
      expect(row).to.include({ version: 3, asOfSeq: 1 })
      expect(row.state).to.deep.equal({ lines: [`said: ${texts[i % texts.length]}`, `again: ${i}`], meta: { last: 1, nested: { ok: true, none: null } } })
    }
    await host.restart()
    register(host)
    const again = await host.ctx.sessions.get(sessions[7].id)
    expect(await host.ctx.projections.get(again, 'test-transcript')).to.deep.equal({ lines: ['said: ' + texts[2], 'again: 7'], meta: { last: 1, nested: { ok: true, none: null } } })
    expect(await rows(host)).to.have.length(300)
  })

  it('writes a session\'s staged events before a cache that folded them', async () => {
    register(host)
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('said', { text: 'first' })
    await host.ctx.projections.get(session, 'test-transcript')
    session.openStep()
    await session.append('said', { text: 'staged' })
    // The step's event is staged, not written; the cache that folded it is saved only with it.
    await host.ctx.projections.flush()
    const stored = await host.ctx.database.get('taskward_event', { sessionId: session.id })
    const [row] = await rows(host)
    expect(row.asOfSeq, 'no saved cache stands past the events written').to.be.at.most(Math.max(...stored.map((event) => event.seq)))
    expect(row.asOfSeq).to.equal(1)
    await session.commitStep()
  })

  it('refuses once the store has failed: the save rejects with the store\'s code and the saved cache stays as it was', async () => {
    register(host)
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('said', { text: 'kept' })
    await host.ctx.projections.get(session, 'test-transcript')
    const before = await rows(host)
    // Advanced by an append (unsaved), then the store fails before the batched save.
    await session.append('said', { text: 'after' })
    storeDriver(host.ctx).fail('STORE_UNAVAILABLE', 'a test said the disk went away')
    await host.ctx.projections.flush().then(() => expect.fail('the save must be refused'), (error) => expect(error.code).to.equal('STORE_UNAVAILABLE'))
    expect(await rows(host)).to.deep.equal(before)
  })

  it('writes a large save in chunks, letting other work of the host run between them', async () => {
    await host.ctx.database.prepared()
    const total = SAVE_CHUNK_ROWS * 2 + 50
    const rowsToSave = Array.from({ length: total }, (_, i) => ({ sessionId: `chunked-${i}`, key: 'test-transcript', version: 1, asOfSeq: i, state: { i } }))
    const count = () => Number(storeDriver(host.ctx).db.exec('SELECT count(*) FROM `taskward_projection`')[0].values[0][0])
    let seenBetween = -1
    const saving = saveProjectionCaches(host.ctx, host.ctx.database, rowsToSave)
    setImmediate(() => { seenBetween = count() })
    await saving
    expect(seenBetween, 'other work ran while the save was under way').to.be.greaterThan(0).and.lessThan(total)
    expect(count()).to.equal(total)
    expect((await rows(host)).find((row) => row.sessionId === 'chunked-249')?.state).to.deep.equal({ i: 249 })
  })

  it('a WAL flush that fails under a save of several chunks refuses with the store\'s code, and nothing rejects unhandled', async () => {
    await host.ctx.database.prepared()
    const driver = storeDriver(host.ctx)
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => { unhandled.push(reason) }
    // mocha's own listener would turn it into an uncaught error: observe it here instead.
    const mochas = process.listeners('unhandledRejection')
    process.removeAllListeners('unhandledRejection')
    process.on('unhandledRejection', onUnhandled)
    try {
      // What the driver's Flusher records when an fsync of the WAL reports an error (EIO).
      driver.flusher.failure = Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })
      const many = Array.from({ length: SAVE_CHUNK_ROWS * 2 + 1 }, (_, i) => ({ sessionId: `s-${i}`, key: 'test-transcript', version: 1, asOfSeq: 0, state: i }))
      const error = await saveProjectionCaches(host.ctx, host.ctx.database, many).then(() => undefined, (reason) => reason)
      await new Promise((resolve) => setImmediate(resolve))
      expect(error?.code, String(error)).to.equal('STORE_UNAVAILABLE')
      expect(unhandled.map(String), 'unhandled rejections').to.deep.equal([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
      for (const listener of mochas) process.on('unhandledRejection', listener as any)
    }
  })

  it('an invalidate while a batched save of several chunks is under way is not undone by it', async () => {
    register(host)
    const sessions = []
    for (let i = 0; i < SAVE_CHUNK_ROWS * 2 + 50; i++) {
      const session = await host.ctx.sessions.create({ cwd: tmpdir() })
      await session.append('said', { text: `${i}` })
      await host.ctx.projections.get(session, 'test-transcript')
      sessions.push(session)
    }
    // Advanced by the appends: all unsaved, the last session's cache in the last chunk.
    for (const session of sessions) await session.append('again', { text: 'x' })
    const last = sessions[sessions.length - 1]
    let invalidating: Promise<void> | undefined
    const flushing = host.ctx.projections.flush()
    // After the first chunk, before the last (the save yields with setImmediate between chunks).
    setImmediate(() => { invalidating = host.ctx.projections.invalidate(last, 'test-transcript') })
    await flushing
    await invalidating
    expect(await host.ctx.database.get('taskward_projection', { sessionId: last.id, key: 'test-transcript' }), 'the save under way wrote the removed cache back').to.deep.equal([])
  })
})

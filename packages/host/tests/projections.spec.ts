import { expect } from 'chai'
import type { Context } from 'cordis'
import type { ProjectionDef } from '@taskward/host'
import type { SessionEvent } from '@taskward/protocol'
import { TestHost } from '@taskward/testkit'
import { tmpdir } from 'node:os'

type Counts = Record<string, number>

/** A projection that counts events by type, and remembers which seqs it folded (to see what was reused). */
function countsByType(version: number, folded: number[]): ProjectionDef<Counts> {
  return {
    key: 'test-counts',
    version,
    init: () => ({}),
    apply(state, event: SessionEvent) {
      folded.push(event.seq)
      return { ...state, [event.type]: (state[event.type] ?? 0) + 1 }
    },
  }
}

/** Register the projection from a plugin of its own, so that disposing that plugin removes it. */
function registerFrom(host: TestHost, def: ProjectionDef) {
  return host.ctx.plugin({
    name: 'test-projection-owner',
    inject: ['projections'],
    apply: (ctx: Context) => { ctx.projections.register(def) },
  })
}

async function cacheRow(host: TestHost, sessionId: string) {
  const [row] = await host.ctx.database.get('taskward_projection', { sessionId, key: 'test-counts' })
  return row
}

describe('host: projections', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  it('folds the log and caches state, version and asOfSeq in the database', async () => {
    const folded: number[] = []
    registerFrom(host, countsByType(1, folded))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (const type of ['a', 'b', 'a', 'c', 'a']) await session.append(type, {})
    const state = await host.ctx.projections.get<Counts>(session, 'test-counts')
    expect(state).to.deep.equal({ a: 3, b: 1, c: 1 })
    expect(folded).to.deep.equal([0, 1, 2, 3, 4])
    const row = await cacheRow(host, session.id)
    expect(row).to.include({ version: 1, asOfSeq: 4 })
    expect(row.state).to.deep.equal({ a: 3, b: 1, c: 1 })
    // Nothing new: the cached state is returned without folding again.
    expect(await host.ctx.projections.get(session, 'test-counts')).to.deep.equal({ a: 3, b: 1, c: 1 })
    expect(folded).to.have.length(5)
  })

  it('follows each append into the caches of its own session only, also between ids that share a prefix', async () => {
    const folded: number[] = []
    registerFrom(host, countsByType(1, folded))
    const one = await host.ctx.sessions.create({ id: 'one', cwd: tmpdir() })
    const other = await host.ctx.sessions.create({ id: 'one.two', cwd: tmpdir() })
    await one.append('a', {})
    await other.append('b', {})
    expect(await host.ctx.projections.get<Counts>(one, 'test-counts')).to.deep.equal({ a: 1 })
    expect(await host.ctx.projections.get<Counts>(other, 'test-counts')).to.deep.equal({ b: 1 })
    expect(folded).to.deep.equal([0, 0])
    for (let i = 0; i < 3; i++) await one.append('c', {})
    // Folded as they were appended (one apply each), into `one`'s cache alone; `other` stays as it was.
    expect(folded).to.deep.equal([0, 0, 1, 2, 3])
    expect(host.ctx.projections.current<Counts>(one, 'test-counts')).to.deep.equal({ a: 1, c: 3 })
    expect(host.ctx.projections.current<Counts>(other, 'test-counts')).to.deep.equal({ b: 1 })
    await other.append('d', {})
    expect(host.ctx.projections.current<Counts>(other, 'test-counts')).to.deep.equal({ b: 1, d: 1 })
    expect(folded).to.deep.equal([0, 0, 1, 2, 3, 1])
  })

  it('starts from the database cache after a restart and folds only the new events', async () => {
    const before: number[] = []
    registerFrom(host, countsByType(1, before))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (const type of ['a', 'b', 'a']) await session.append(type, {})
    await host.ctx.projections.get(session, 'test-counts')
    expect(before).to.deep.equal([0, 1, 2])

    await host.restart()
    const after: number[] = []
    registerFrom(host, countsByType(1, after))
    const again = await host.ctx.sessions.get(session.id)
    await again.append('b', {})
    await again.append('c', {})
    expect(await host.ctx.projections.get(again, 'test-counts')).to.deep.equal({ a: 2, b: 2, c: 1 })
    expect(after).to.deep.equal([3, 4])
    expect(await cacheRow(host, session.id)).to.include({ version: 1, asOfSeq: 4 })
  })

  it('keeps the folds of at most `cachedSessions` sessions in memory: the least recently advanced are forgotten once saved, and read back from their saved cache', async () => {
    await host.dispose()
    host = await TestHost.boot({ host: { projections: { cachedSessions: 2 } } })
    const folded: number[] = []
    registerFrom(host, countsByType(1, folded))
    const sessions = []
    for (let i = 0; i < 5; i++) {
      const session = await host.ctx.sessions.create({ cwd: tmpdir() })
      await session.append('a', {})
      await session.append(`s${i}`, {})
      expect(await host.ctx.projections.get(session, 'test-counts')).to.deep.equal({ a: 1, [`s${i}`]: 1 })
      sessions.push(session)
    }
    // The last one advanced stays, by an append after the others.
    await sessions[1].append('b', {})
    await host.ctx.projections.flush()
    const held = sessions.filter((session) => host.ctx.projections.current(session, 'test-counts') !== undefined)
    expect(held.map((session) => session.id)).to.have.members([sessions[4].id, sessions[1].id])
    // A forgotten session reads back from its saved cache: the same state, nothing folded again.
    const before = folded.length
    expect(await host.ctx.projections.get(sessions[0], 'test-counts')).to.deep.equal({ a: 1, s0: 1 })
    expect(folded.length).to.equal(before)
    // And it goes on from there.
    await sessions[0].append('c', {})
    expect(await host.ctx.projections.get(sessions[0], 'test-counts')).to.deep.equal({ a: 1, s0: 1, c: 1 })
    expect(folded.slice(before)).to.deep.equal([2])
  })

  it('trims to `cachedSessions` sessions that were only read, and tells who mirrors a projection which sessions went', async () => {
    await host.dispose()
    host = await TestHost.boot({ host: { projections: { cachedSessions: 2 } } })
    registerFrom(host, countsByType(1, []))
    const forgotten: string[] = []
    host.ctx.projections.observeForgotten((sessionId) => forgotten.push(sessionId))
    const sessions = []
    for (let i = 0; i < 5; i++) {
      const session = await host.ctx.sessions.create({ cwd: tmpdir() })
      await session.append('a', {})
      // Read, never advanced by an append afterwards: nothing is left unsaved for a batched save.
      await host.ctx.projections.get(session, 'test-counts')
      sessions.push(session)
    }
    await host.ctx.projections.flush()
    const held = sessions.filter((session) => host.ctx.projections.current(session, 'test-counts') !== undefined)
    expect(held.map((session) => session.id)).to.deep.equal([sessions[3].id, sessions[4].id])
    expect(forgotten).to.deep.equal(sessions.slice(0, 3).map((session) => session.id))
    expect(await host.ctx.projections.get(sessions[0], 'test-counts')).to.deep.equal({ a: 1 })
  })

  it('discards a cache of another version and rebuilds from seq 0 to the same state', async () => {
    const v1: number[] = []
    const owner = registerFrom(host, countsByType(1, v1))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (const type of ['x', 'y', 'x', 'z']) await session.append(type, {})
    const first = await host.ctx.projections.get(session, 'test-counts')
    expect(await cacheRow(host, session.id)).to.include({ version: 1, asOfSeq: 3 })
    owner.dispose()

    const v2: number[] = []
    registerFrom(host, countsByType(2, v2))
    const rebuilt = await host.ctx.projections.get(session, 'test-counts')
    expect(v2).to.deep.equal([0, 1, 2, 3])
    expect(rebuilt).to.deep.equal(first)
    const row = await cacheRow(host, session.id)
    expect(row).to.include({ version: 2, asOfSeq: 3 })
    expect(row.state).to.deep.equal(first)
  })

  it('rebuilds after the bump also when the old version was cached before a restart', async () => {
    registerFrom(host, countsByType(1, []))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (const type of ['x', 'y']) await session.append(type, {})
    await host.ctx.projections.get(session, 'test-counts')
    await host.restart()
    const v2: number[] = []
    registerFrom(host, countsByType(2, v2))
    expect(await host.ctx.projections.get(await host.ctx.sessions.get(session.id), 'test-counts')).to.deep.equal({ x: 1, y: 1 })
    expect(v2).to.deep.equal([0, 1])
  })

  it('rebuilds from seq 0 after invalidate', async () => {
    const folded: number[] = []
    registerFrom(host, countsByType(1, folded))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (const type of ['a', 'b']) await session.append(type, {})
    await host.ctx.projections.get(session, 'test-counts')
    await host.ctx.projections.invalidate(session, 'test-counts')
    expect(await cacheRow(host, session.id)).to.equal(undefined)
    expect(await host.ctx.projections.get(session, 'test-counts')).to.deep.equal({ a: 1, b: 1 })
    expect(folded).to.deep.equal([0, 1, 0, 1])
  })

  it('removes a projection when the plugin that registered it is disposed', async () => {
    const owner = registerFrom(host, countsByType(1, []))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('a', {})
    expect(await host.ctx.projections.get(session, 'test-counts')).to.deep.equal({ a: 1 })
    owner.dispose()
    await host.ctx.projections.get(session, 'test-counts').then(
      () => expect.fail('a disposed projection must not answer'),
      (error) => expect(error.code).to.equal('NOT_FOUND'),
    )
    // The key is free again for a new owner.
    registerFrom(host, countsByType(1, []))
    expect(await host.ctx.projections.get(session, 'test-counts')).to.deep.equal({ a: 1 })
  })

  it('refuses a second registration of a key that is taken', async () => {
    registerFrom(host, countsByType(1, []))
    expect(() => host.ctx.projections.register(countsByType(1, []))).to.throw().with.property('code', 'CONFIG_INVALID')
  })

  it('a get of a cache kept current by the appends writes nothing; the batched save (or flush) writes it once', async () => {
    const folded: number[] = []
    registerFrom(host, countsByType(1, folded))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (const type of ['a', 'b', 'a']) await session.append(type, {})
    await host.ctx.projections.get(session, 'test-counts')
    expect(await cacheRow(host, session.id)).to.include({ asOfSeq: 2 })
    for (const c of [1, 2]) {
      await session.append('c', {})
      // A step-path read: answered from memory, no write (a durable write per read was the cost).
      expect(await host.ctx.projections.get(session, 'test-counts')).to.include({ c })
    }
    expect(folded, 'followed, not read again').to.deep.equal([0, 1, 2, 3, 4])
    expect(await cacheRow(host, session.id)).to.include({ asOfSeq: 2 })
    await host.ctx.projections.flush()
    const row = await cacheRow(host, session.id)
    expect(row).to.include({ asOfSeq: 4 })
    expect(row.state).to.deep.equal({ a: 2, b: 1, c: 2 })
  })
})

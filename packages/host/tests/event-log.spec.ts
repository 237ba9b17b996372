import { expect } from 'chai'
import type { Context } from 'cordis'
import type { ProjectionDef } from '@taskward/host'
import { TestHost } from '@taskward/testkit'
import { tmpdir } from 'node:os'
import { storeDriver } from '../src/store/health'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function typedCounter(folded: number[], frozen: boolean[] = []): ProjectionDef<number> {
  return {
    key: 'test-typed',
    version: 1,
    types: ['keep'],
    init: () => 0,
    apply(state, event) {
      folded.push(event.seq)
      frozen.push(Object.isFrozen(event) || Object.isFrozen(event.data))
      return state + (event.data.n ?? 0)
    },
  }
}

function registerFrom(host: TestHost, def: ProjectionDef) {
  host.ctx.plugin({ name: 'test-projection-owner', inject: ['projections'], apply: (ctx: Context) => { ctx.projections.register(def) } })
}

describe('host: the event log hot paths', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  it('appends a batch in one transaction: all of it at consecutive seqs, or none of it', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('a', { n: 1 })
    const events = await session.appendBatch([{ type: 'b', data: { n: 2 } }, { type: 'c', data: undefined }, { type: 'd', data: { s: 'é\u0000x' } }])
    expect(events.map((e) => e.seq)).to.deep.equal([1, 2, 3])
    expect(events[1].data).to.equal(null)
    expect(Object.isFrozen(events[2].data)).to.equal(true)
    // A batch that cannot be serialized writes nothing.
    const cyclic: any = {}
    cyclic.self = cyclic
    await session.appendBatch([{ type: 'e', data: {} }, { type: 'f', data: cyclic }]).then(() => expect.fail('should throw'), () => {})
    expect(session.seq).to.equal(4)
    const stored = await session.read({ from: 0, limit: 100 })
    expect(stored.map((e) => [e.seq, e.type])).to.deep.equal([[0, 'a'], [1, 'b'], [2, 'c'], [3, 'd']])
    expect(stored[3].data).to.deep.equal({ s: 'é\u0000x' })
    // An empty batch is the caller's mistake, and says so (it used to blame a missing type).
    const empty = await session.appendBatch([]).then(() => undefined, (error) => error)
    expect(empty?.code).to.equal('BAD_REQUEST')
    expect(empty?.message).to.match(/at least one event/)
    expect(session.seq).to.equal(4)
  })

  it('reads only the types asked for, in seq order, with paging', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (let i = 0; i < 30; i++) await session.append(i % 3 === 0 ? 'keep' : 'skip', { n: i })
    const kept = await session.read({ from: 5, limit: 4, types: ['keep'] })
    expect(kept.map((e) => e.seq)).to.deep.equal([6, 9, 12, 15])
    expect(await session.read({ from: 0, limit: 10, types: [] })).to.deep.equal([])
    const all = []
    for await (const event of session.events(0, 7, { types: ['keep', 'missing'] })) all.push(event.seq)
    expect(all).to.deep.equal([0, 3, 6, 9, 12, 15, 18, 21, 24, 27])
  })

  it('reads back exactly what minato stores: odd types, fractional and null-free times, any JSON data', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    const rows = [
      { seq: 0, type: 'q"\\é✓\u2028', time: 1764527000123.5, data: { a: [1, 'x', null], s: '\u2028"}]', n: 0.1 } },
      { seq: 1, type: 'plain', time: 0.1, data: null },
      { seq: 2, type: 'plain', time: 1e300, data: { t: 'text' } },
      { seq: 3, type: 'plain', time: 123456789012345680, data: [{}, []] },
      // Integer-valued times (what Date.now() gives) are printed as integers, the others with 17 digits.
      { seq: 4, type: 'plain', time: 1764527000123, data: 1 },
      { seq: 5, type: 'plain', time: -3, data: 2 },
      { seq: 6, type: 'plain', time: 9007199254740993, data: 3 },
    ]
    await host.ctx.database.upsert('taskward_event', rows.map((row) => ({ sessionId: session.id, ...row })))
    const read = await session.read({ from: 0, limit: 10 })
    const minato = await host.ctx.database.select('taskward_event').where({ sessionId: session.id }).orderBy('seq', 'asc').execute()
    expect(read).to.deep.equal(minato.map(({ seq, type, time, data }) => ({ seq, type, time, data })))
    expect(read).to.deep.equal(rows)
    expect(await session.read({ from: 1, limit: 2, types: ['plain'] })).to.deep.equal(rows.slice(1, 3))
  })

  it('refuses a page holding a row whose data is not one JSON value, as a row-by-row read does', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (let i = 0; i < 3; i++) await session.append('a', { n: i })
    // Text that would splice into the page's JSON array as an extra key if it were trusted as is.
    storeDriver(host.ctx).db.run('UPDATE `taskward_event` SET `data` = ? WHERE `sessionId` = ? AND `seq` = 1', ['1,"seq":7', session.id])
    await session.read({ from: 0, limit: 10 }).then(() => expect.fail('should refuse'), (error) => expect(error).to.be.instanceOf(SyntaxError))
    expect((await session.read({ from: 2, limit: 10 })).map((e) => e.data)).to.deep.equal([{ n: 2 }])
  })

  it('folds only the declared types, with unfrozen events, and stands at the end of the log', async () => {
    const folded: number[] = []
    const frozen: boolean[] = []
    registerFrom(host, typedCounter(folded, frozen))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (let i = 0; i < 10; i++) await session.append(i % 2 ? 'keep' : 'skip', { n: i })
    expect(await host.ctx.projections.get(session, 'test-typed')).to.equal(1 + 3 + 5 + 7 + 9)
    expect(folded).to.deep.equal([1, 3, 5, 7, 9])
    expect(frozen).to.deep.equal([false, false, false, false, false])
    await session.append('skip', { n: 100 })
    expect(await host.ctx.projections.get(session, 'test-typed')).to.equal(25)
    await host.ctx.projections.invalidate(session, 'test-typed')
    expect(await host.ctx.projections.get(session, 'test-typed')).to.equal(25)
    expect(await host.ctx.projections.describe(session, 'test-typed')).to.deep.equal({ version: 1, asOfSeq: 10 })
  })

  it('writes a fold\'s cache in the background: describe waits for it, invalidate is not undone by it', async () => {
    const folded: number[] = []
    registerFrom(host, typedCounter(folded))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (let i = 0; i < 4; i++) await session.append('keep', { n: 1 })
    expect(await host.ctx.projections.get(session, 'test-typed', { background: true })).to.equal(4)
    expect(await host.ctx.projections.describe(session, 'test-typed')).to.deep.equal({ version: 1, asOfSeq: 3 })
    await host.ctx.projections.invalidate(session, 'test-typed')
    expect(await host.ctx.projections.get(session, 'test-typed', { background: true })).to.equal(4)
    // No wait between the fold and the removal: the write in flight lands first, then goes.
    await host.ctx.projections.invalidate(session, 'test-typed')
    expect(await host.ctx.projections.describe(session, 'test-typed')).to.equal(undefined)
    await sleep(50)
    expect(await host.ctx.projections.describe(session, 'test-typed')).to.equal(undefined)
    expect(folded).to.deep.equal([0, 1, 2, 3, 0, 1, 2, 3])
  })

  it('a cache write still in flight when the host stops neither crashes nor corrupts the next start', async () => {
    registerFrom(host, typedCounter([]))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (let i = 0; i < 3; i++) await session.append('keep', { n: 1 })
    expect(await host.ctx.projections.get(session, 'test-typed', { background: true })).to.equal(3)
    await host.restart()
    registerFrom(host, typedCounter([]))
    const again = await host.ctx.sessions.get(session.id)
    expect(await host.ctx.projections.get(again, 'test-typed')).to.equal(3)
    await sleep(50)
  })

  it('saves caches as the log grows, so a restart folds only the events after the last save', async () => {
    const folded: number[] = []
    registerFrom(host, typedCounter(folded))
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('keep', { n: 1 })
    await host.ctx.projections.get(session, 'test-typed')
    for (let i = 0; i < 50; i++) await session.append('keep', { n: 1 })
    // No read since: the cache follows the appends and is saved shortly after.
    for (let i = 0; i < 50 && (await host.ctx.projections.describe(session, 'test-typed'))?.asOfSeq !== 50; i++) await sleep(100)
    expect(await host.ctx.projections.describe(session, 'test-typed')).to.deep.equal({ version: 1, asOfSeq: 50 })
    await host.restart()
    const after: number[] = []
    registerFrom(host, typedCounter(after))
    const again = await host.ctx.sessions.get(session.id)
    await again.append('keep', { n: 1 })
    expect(await host.ctx.projections.get(again, 'test-typed')).to.equal(52)
    expect(after).to.deep.equal([51])
  })
})

import { expect } from 'chai'
import { original } from '@taskward/host'
import { TestHost } from '@taskward/testkit'
import { tmpdir } from 'node:os'

describe('host: sessions', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  it('numbers events from 0 and reads them back identically after a restart', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    const written = []
    for (let i = 0; i < 5; i++) written.push(await session.append('test/event', { i, nested: { list: [i, 'x'] } }))
    expect(written.map((e) => e.seq)).to.deep.equal([0, 1, 2, 3, 4])
    expect(Object.isFrozen(written[0]) && Object.isFrozen(written[0].data)).to.equal(true)
    await host.restart()
    const again = await host.ctx.sessions.get(session.id)
    expect(again.seq).to.equal(5)
    const read = await again.read({ from: 0, limit: 100 })
    expect(read.map(({ seq, type, data, time }) => ({ seq, type, data, time })))
      .to.deep.equal(written.map(({ seq, type, data, time }) => ({ seq, type, data, time })))
    expect((await again.append('test/event', { i: 5 })).seq).to.equal(5)
  })

  it('gives 200 concurrent appends the seqs 0..199 and loses none', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    const events = await Promise.all(Array.from({ length: 200 }, (_, i) => session.append('test/concurrent', { i })))
    expect(events.map((e) => e.seq).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 200 }, (_, i) => i))
    const stored = await session.read({ from: 0, limit: 1000 })
    expect(stored).to.have.length(200)
    expect(new Set(stored.map((e) => e.data.i)).size).to.equal(200)
  })

  it('lets a second writer of the same session take the next seq instead of overwriting', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('test/a', {})
    // A second process's writer: a Session object that believes seq 1 is still free after another commit.
    await host.ctx.database.create('taskward_event', { sessionId: session.id, seq: 1, type: 'test/other-writer', time: Date.now(), data: {} })
    const event = await session.append('test/b', {})
    expect(event.seq).to.equal(2)
    const types = (await session.read()).map((e) => e.type)
    expect(types).to.deep.equal(['test/a', 'test/other-writer', 'test/b'])
  })

  it('refuses unknown sessions and duplicate ids with coded errors', async () => {
    await host.ctx.sessions.get('nope').then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('SESSION_NOT_FOUND'))
    await host.ctx.sessions.create({ id: 'one', cwd: tmpdir() })
    await host.ctx.sessions.create({ id: 'one', cwd: tmpdir() }).then(() => expect.fail('should refuse'), (error) => expect(error.code).to.equal('BAD_REQUEST'))
  })

  it('creates a session with a generated id by one write, without first reading whether the id is taken', async () => {
    const database = original(host.ctx.database) as any
    const reads: unknown[] = []
    const get = database.get
    database.get = function (table: string, ...rest: unknown[]) {
      if (table === 'taskward_session') reads.push(rest[0])
      return get.call(this, table, ...rest)
    }
    try {
      const session = await host.ctx.sessions.create({ cwd: tmpdir(), role: 'reviewer' })
      expect(reads).to.deep.equal([])
      expect((await host.ctx.database.get('taskward_session', { id: session.id }))[0]).to.include({ role: 'reviewer' })
      // A caller's own id is still checked first (refused with a coded error, see above).
      reads.length = 0
      await host.ctx.sessions.create({ id: 'mine', cwd: tmpdir() })
      expect(reads).to.deep.equal([{ id: 'mine' }])
    } finally {
      database.get = get
    }
  })

  it('resolves an append once it is durable even when a session/event listener throws', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    host.ctx.on('session/event', () => { throw new Error('a broken listener') })
    const event = await session.append('test/x', { ok: true })
    expect(event.seq).to.equal(0)
    expect((await session.read()).map((e) => e.type)).to.deep.equal(['test/x'])
    expect((await session.append('test/y', {})).seq).to.equal(1)
  })

  it('emits session/event only after the event is stored', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    const seen: number[] = []
    host.ctx.on('session/event', async (s, event) => {
      const [row] = await host.ctx.database.get('taskward_event', { sessionId: s.id, seq: event.seq })
      if (row) seen.push(event.seq)
    })
    await session.append('test/x', {})
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(seen).to.deep.equal([0])
  })
})

import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { TestHost, mysqlTestConfig } from '@taskward/testkit'
import { storeDriver } from '@taskward/host'

/*
 * MySQL/MariaDB for real: several hosts sharing one store. CI starts a MariaDB server and sets
 * TASKWARD_TEST_MYSQL=mysql://user:password@host:port/database; elsewhere these run when it is set.
 */
const url = process.env.TASKWARD_TEST_MYSQL

const mysqlConfig = () => mysqlTestConfig(url!)

describe('database plugin: MySQL/MariaDB', function () {
  this.timeout(60_000)
  const hosts: TestHost[] = []

  before(function () {
    if (url) return
    if (process.env.CI) throw new Error('CI must set TASKWARD_TEST_MYSQL (.ci/run starts MariaDB)')
    this.skip()
  })
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.dispose()))
  })

  const boot = async () => {
    const host = await TestHost.boot({ database: mysqlConfig() })
    hosts.push(host)
    return host
  }

  it('lets two hosts start at once on an empty store: both create or find every table', async () => {
    for (let round = 0; round < 3; round++) {
      const first = await boot()
      const { pool } = storeDriver(first.ctx)
      const query = (sql: string) => new Promise<any>((resolve, reject) => pool.query(sql, (error: any, rows: any) => error ? reject(error) : resolve(rows)))
      const tables = (await query('SHOW TABLES')).map((row: any) => Object.values(row)[0] as string)
      await Promise.all(hosts.splice(0).map((host) => host.dispose()))
      // A fresh store again: the next two hosts race to create the same tables.
      const second = await TestHost.boot({ database: mysqlConfig() })
      const drop = storeDriver(second.ctx).pool
      await new Promise<void>((resolve, reject) => drop.query(`DROP TABLE IF EXISTS ${tables.map((t: string) => '`' + t + '`').join(', ')}`, (error: any) => error ? reject(error) : resolve()))
      await second.dispose()
      const [a, b] = await Promise.all([boot(), boot()])
      const session = await a.ctx.sessions.create({ cwd: tmpdir() })
      await session.append('test/event', { round })
      expect((await (await b.ctx.sessions.get(session.id)).read({ from: 0 })).map((e) => e.type)).to.include('test/event')
      await Promise.all(hosts.splice(0).map((host) => host.dispose()))
    }
  })

  it('keeps events durable across a restart with identical seq, type and data', async () => {
    const host = await boot()
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    const written = []
    for (let i = 0; i < 5; i++) written.push(await session.append('test/mysql', { i, nested: { list: [i, 'x'] } }))
    await host.restart()
    const read = await (await host.ctx.sessions.get(session.id)).read()
    expect(read.map(({ seq, type, data }) => ({ seq, type, data }))).to.deep.equal(written.map(({ seq, type, data }) => ({ seq, type, data })))
  })

  it('lets two hosts append to one session concurrently: contiguous seqs, nothing lost', async () => {
    const [a, b] = [await boot(), await boot()]
    const created = await a.ctx.sessions.create({ cwd: tmpdir() })
    const [onA, onB] = [created, await b.ctx.sessions.get(created.id)]
    const appends = Array.from({ length: 40 }, (_, i) => (i % 2 ? onB : onA).append('test/shared', { writer: i % 2 ? 'b' : 'a', i }))
    const settled = await Promise.allSettled(appends)
    const committed = settled.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<any>).value)
    // A writer that keeps losing the race gives up with SEQ_CONFLICT; nothing else may fail.
    for (const result of settled) {
      if (result.status === 'rejected') expect(result.reason.code).to.equal('SEQ_CONFLICT')
    }
    const stored = await onA.read({ from: 0, limit: 1000 })
    expect(stored.map((e) => e.seq)).to.deep.equal(stored.map((_, i) => i))
    expect(stored).to.have.length(committed.length)
    expect(new Set(stored.map((e) => `${e.data.writer}${e.data.i}`)).size).to.equal(stored.length)
    expect(committed.length).to.be.greaterThan(20)
  })

  it('holds events and projection caches far over 64 KiB (utf8mb4 TEXT columns are MEDIUMTEXT, 16 MiB)', async () => {
    const host = await boot()
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    const big = { text: 'x'.repeat(3 * 1024 * 1024) + 'ü€😀'.repeat(1000) }
    await session.append('test/big', big)
    host.ctx.projections.register({ key: 'test-big', version: 1, init: () => ({ texts: [] as string[] }), apply: (state, event) => ({ texts: [...state.texts, event.data.text] }) })
    expect((await host.ctx.projections.get(session, 'test-big')).texts[0]).to.equal(big.text)
    await host.restart()
    const again = await host.ctx.sessions.get(session.id)
    expect((await again.read())[0].data).to.deep.equal(big)
    expect((await host.ctx.projections.describe(again, 'test-big'))?.asOfSeq).to.equal(0)
  })
})

import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { TestHost, mysqlTestConfig, skipWithoutMysql } from '@taskward/testkit'
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

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.dispose()))
  })

  const boot = async () => {
    const host = await TestHost.boot({ database: mysqlConfig() })
    hosts.push(host)
    return host
  }

  /*
   * Two hosts starting at once on a fresh store both read information_schema, find nothing, and both
   * create: the second CREATE TABLE / CREATE INDEX fails. The race is timing (CI lost a host to it);
   * here the first read of one host is made to answer what it would have seen a moment earlier.
   */
  const answeringEarlierOnce = (driver: any, method: 'queue' | 'getIndexes', earlier: (args: any[]) => unknown) => {
    const original = driver[method]
    let seen = false
    driver[method] = function (this: unknown, ...args: any[]) {
      const answer = seen ? undefined : earlier(args)
      if (answer !== undefined) {
        seen = true
        return Promise.resolve(answer)
      }
      return original.apply(this, args)
    }
    return () => { driver[method] = original }
  }

  it('prepares a table another host created after this host found none (no ER_TABLE_EXISTS_ERROR)', async () => {
    const host = await boot()
    await host.ctx.database.prepared()
    const driver = storeDriver(host.ctx) as any
    const restore = answeringEarlierOnce(driver, 'queue', ([sql]) => /information_schema\.columns/.test(sql) ? [] : undefined)
    try {
      await driver.prepare('taskward_event')
    } finally {
      restore()
    }
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    expect((await session.append('test/event', {})).seq).to.be.a('number')
  })

  it('prepares an index another host created after this host found none (no ER_DUP_KEYNAME, which crashed the started host)', async () => {
    const host = await boot()
    await host.ctx.database.prepared()
    const driver = storeDriver(host.ctx) as any
    const restore = answeringEarlierOnce(driver, 'getIndexes', () => [])
    try {
      await driver.prepareIndexes('taskward_event')
    } finally {
      restore()
    }
    expect((await driver.getIndexes('taskward_event')).map((index: any) => index.name)).to.include('taskward_event_type')
  })

  it('prepares an index two hosts both replace at once (its DROP finds no key, then its CREATE finds the other host\'s)', async () => {
    // Both hosts read an index of an older shape. The other host drops it first (this DROP INDEX
    // fails), this host reads again before the other host's CREATE INDEX committed, finds no index
    // and creates it too (this CREATE fails): two raced statements in one prepare.
    const host = await boot()
    await host.ctx.database.prepared()
    const driver = storeDriver(host.ctx) as any
    const name = 'taskward_event_type'
    const [index] = (await driver.getIndexes('taskward_event')).filter((i: any) => i.name === name)
    const original = driver.getIndexes
    const otherHost: (() => Promise<unknown>)[] = [
      () => driver.dropIndex('taskward_event', name),
      () => driver.createIndex('taskward_event', index),
    ]
    const answers: ((real: any[]) => any[])[] = [
      () => [{ ...index, keys: { sessionId: 'asc' } }],
      (real) => real,
    ]
    driver.getIndexes = async function (this: unknown, table: string) {
      const real = await original.call(this, table)
      if (table !== 'taskward_event') return real
      const answer = answers.shift()?.(real) ?? real
      await otherHost.shift()?.()
      return answer
    }
    try {
      await driver.prepareIndexes('taskward_event')
    } finally {
      driver.getIndexes = original
    }
    expect(otherHost, 'both of the other host\'s statements ran').to.have.length(0)
    expect((await driver.getIndexes('taskward_event')).filter((i: any) => i.name === name)).to.deep.equal([index])
  })

  it('still fails a start whose DDL fails as a race every time (a read that never sees what the server holds): no loop, the server\'s error', async () => {
    const host = await boot()
    await host.ctx.database.prepared()
    const driver = storeDriver(host.ctx) as any
    const original = driver.getIndexes
    let reads = 0
    driver.getIndexes = async (table: string) => table === 'taskward_event' ? (reads++, []) : original.call(driver, table)
    let failure: any
    try {
      await driver.prepareIndexes('taskward_event')
    } catch (error) {
      failure = error
    } finally {
      driver.getIndexes = original
    }
    expect(failure?.code).to.equal('ER_DUP_KEYNAME')
    expect(reads).to.equal(5)
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

import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { TestHost, mysqlTestConfig, skipWithoutMysql } from '@taskward/testkit'
import { storeDriver } from '@taskward/host'

/*
 * The cordis CLI ends the host on SIGINT/SIGTERM only once every `exit` listener settled
 * (`ctx.parallel('exit').finally(process.exit)`). The host saves projection caches and releases its
 * leases there: when the server holds those writes without answering (a table lock another client
 * took — LOCK TABLES, an ALTER TABLE —, a server frozen or partitioned mid-query), they never settle,
 * and Ctrl-C must still end the host. Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('exit hooks with a store that stopped answering', function () {
  this.timeout(120_000)
  let host: TestHost | undefined
  let locker: any

  before(function () { skipWithoutMysql(this) })
  after(async () => {
    if (locker) await new Promise((resolve) => locker.query('UNLOCK TABLES', () => { locker.release(); resolve(undefined) }))
    await host?.dispose()
  })

  it('`exit` settles although the projection cache save and the lease release never get an answer (Ctrl-C still ends the host)', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    const { ctx } = host
    ctx.plugin({
      name: 'exit-test-projection',
      inject: ['projections'],
      apply: (c: any) => { c.projections.register({ key: 'exit-test/count', version: 1, init: () => 0, apply: (n: number) => n + 1 }) },
    })
    await new Promise((resolve) => ctx.inject(['projections'], resolve))
    // A main session with its agent (this host holds its lease), and a cache advanced by an append
    // that is not saved yet (the save comes a second later, or at exit).
    const session = await ctx.sessions.create({ id: `exit-${randomUUID()}`, cwd: tmpdir() })
    await ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' })
    await ctx.projections.get(session, 'exit-test/count')
    await session.append('test/tick', {})

    // Another client locks both tables: the host's writes to them wait (lock_wait_timeout: a year).
    const pool = storeDriver(ctx).pool
    locker = await new Promise((resolve, reject) => pool.getConnection((error: any, connection: any) => error ? reject(error) : resolve(connection)))
    await new Promise((resolve, reject) => locker.query('LOCK TABLES `taskward_projection` WRITE, `taskward_lease` WRITE', (error: any) => error ? reject(error) : resolve(undefined)))
    const exited = (ctx as any).parallel('exit', 'SIGINT').then(() => 'settled', () => 'settled')
    const outcome = await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 60_000, 'still waiting'))])
    expect(outcome, 'the exit hooks wait for a store that never answers: the CLI would never exit').to.equal('settled')
  })
})

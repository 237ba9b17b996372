import { expect } from 'chai'
import { TcpProxy, TestHost, freePort, mysqlTestConfig, skipWithoutMysql, storeQuery, type Relay } from '@taskward/testkit'

/*
 * Review of issue 30 point 3 (store-failure.ts `storeUnavailable`): a connection lost AFTER a write
 * statement reached the server (its answer lost on the way back) is classified STORE_UNAVAILABLE with
 * "This request did not complete; make it again once the store answers". The write did complete: the
 * row is in the log. The caller is told something false, and following the advice appends twice
 * (a user message, a command). The outcome of such a statement is unknown and must be said so.
 */
const url = process.env.TASKWARD_TEST_MYSQL

/**
 * A relay that, when `takeArmed()` says so, forwards the next INSERT into the event table to the server
 * and then cuts the connection before its answer reaches the host.
 */
function cutAfterInsert(takeArmed: () => boolean): Relay {
  return (client, upstream) => {
    let cutting = false
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes('INSERT INTO `taskward_event`') && takeArmed()) {
        cutting = true
        // The statement reaches the server; its answer never reaches the host.
        upstream.write(chunk, () => setTimeout(() => { client.destroy(); upstream.destroy() }, 300))
        return
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => { if (!cutting) client.write(chunk) })
  }
}

describe('store: MySQL/MariaDB, a connection lost after an INSERT reached the server', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  let proxy: TcpProxy | undefined
  let armed = false

  before(function () { skipWithoutMysql(this) })
  after(async () => {
    await host?.dispose()
    await proxy?.down()
  })

  it('is not reported as "did not complete" when the row was written', async () => {
    const store = mysqlTestConfig(url!)
    proxy = new TcpProxy(await freePort(), { host: store.host, port: store.port }, cutAfterInsert(() => {
      const was = armed
      armed = false
      return was
    }))
    await proxy.up()
    host = await TestHost.boot({ database: { ...store, host: '127.0.0.1', port: proxy.port } })
    const session = await host.ctx.sessions.create({ cwd: host.dataDir })
    armed = true
    const refusal: any = await session.append('test/ambiguous', { note: 'sent once' }).then(() => undefined, (error) => error)
    expect(refusal, 'the append was refused (precondition)').to.not.equal(undefined)
    const rows = await storeQuery(host.ctx)('SELECT `seq` FROM `taskward_event` WHERE `sessionId` = ? AND `type` = ?', [session.id, 'test/ambiguous'])
    expect(rows.length, 'the row reached the log (precondition)').to.equal(1)
    expect(`${refusal.code}: ${refusal.message}`, 'the refusal claims the write did not happen').to.not.match(/did not complete/)
  })
})

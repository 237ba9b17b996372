import { expect } from 'chai'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { TestHost, freePort, mysqlTestConfig, skipWithoutMysql, storeQuery } from '@taskward/testkit'

/*
 * Review of issue 30 point 3 (store-failure.ts `storeUnavailable`): a connection lost AFTER a write
 * statement reached the server (its answer lost on the way back) is classified STORE_UNAVAILABLE with
 * "This request did not complete; make it again once the store answers". The write did complete: the
 * row is in the log. The caller is told something false, and following the advice appends twice
 * (a user message, a command). The outcome of such a statement is unknown and must be said so.
 */
const url = process.env.TASKWARD_TEST_MYSQL

/** A TCP proxy that, once armed, forwards the next INSERT to the server and then cuts the connection before its answer. */
class CuttingProxy {
  server?: Server
  armed = false
  readonly sockets = new Set<Socket>()
  constructor(readonly port: number, readonly target: { host: string, port: number }) {}

  up() {
    return new Promise<void>((resolve, reject) => {
      this.server = createServer((client) => {
        const upstream = createConnection(this.target)
        for (const socket of [client, upstream]) {
          this.sockets.add(socket)
          socket.on('close', () => this.sockets.delete(socket))
          socket.on('error', () => {})
        }
        let cutting = false
        client.on('data', (chunk) => {
          if (this.armed && chunk.includes('INSERT INTO `taskward_event`')) {
            this.armed = false
            cutting = true
            // The statement reaches the server; its answer never reaches the host.
            upstream.write(chunk, () => setTimeout(() => { client.destroy(); upstream.destroy() }, 300))
            return
          }
          upstream.write(chunk)
        })
        upstream.on('data', (chunk) => { if (!cutting) client.write(chunk) })
        client.on('close', () => upstream.destroy())
        upstream.on('close', () => client.destroy())
      })
      this.server.once('error', reject)
      this.server.listen(this.port, '127.0.0.1', () => resolve())
    })
  }

  close() {
    for (const socket of this.sockets) socket.destroy()
    return new Promise<void>((resolve) => this.server ? this.server.close(() => resolve()) : resolve())
  }
}

describe('review: MySQL/MariaDB, a connection lost after an INSERT reached the server', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  let proxy: CuttingProxy | undefined

  before(function () { skipWithoutMysql(this) })
  after(async () => {
    await host?.dispose()
    await proxy?.close()
  })

  it('is not reported as "did not complete" when the row was written', async () => {
    const store = mysqlTestConfig(url!)
    proxy = new CuttingProxy(await freePort(), { host: store.host, port: store.port })
    await proxy.up()
    host = await TestHost.boot({ database: { ...store, host: '127.0.0.1', port: proxy.port } })
    const session = await host.ctx.sessions.create({ cwd: host.dataDir })
    proxy.armed = true
    const refusal: any = await session.append('test/ambiguous', { note: 'sent once' }).then(() => undefined, (error) => error)
    expect(refusal, 'the append was refused (precondition)').to.not.equal(undefined)
    const rows = await storeQuery(host.ctx)('SELECT `seq` FROM `taskward_event` WHERE `sessionId` = ? AND `type` = ?', [session.id, 'test/ambiguous'])
    expect(rows.length, 'the row reached the log (precondition)').to.equal(1)
    expect(`${refusal.code}: ${refusal.message}`, 'the refusal claims the write did not happen').to.not.match(/did not complete/)
  })
})

import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { Logger } from 'cordis'
import { TcpProxy, TestHost, freePort, mysqlTestConfig, skipWithoutMysql, waitFor } from '@taskward/testkit'

/*
 * Lease renewal while the store is down: every held session's renewal fails every interval, and each
 * failure used to be a warning — sessions × intervals lines for one outage. It is said once when the
 * renewals start failing and once when they work again. Runs when TASKWARD_TEST_MYSQL is set.
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('host: lease renewal while the MySQL/MariaDB store is down', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  let proxy: TcpProxy | undefined
  const lines: { type: string, content: string }[] = []
  const target: Logger.Target = { record: (record) => { lines.push({ type: record.type, content: record.content }) }, levels: { base: 3 } }

  before(function () { skipWithoutMysql(this) })
  beforeEach(() => { Logger.targets.push(target) })
  afterEach(async () => {
    Logger.targets.splice(Logger.targets.indexOf(target), 1)
    await host?.dispose()
    await proxy?.down()
    host = proxy = undefined
  })

  it('warns once per outage for all the sessions held here, and says when renewals work again', async () => {
    const store = mysqlTestConfig(url!)
    proxy = new TcpProxy(await freePort(), { host: store.host, port: store.port })
    await proxy.up()
    host = await TestHost.boot({ database: { ...store, host: '127.0.0.1', port: proxy.port }, host: { agents: { leaseDuration: 10_000, leaseRenewInterval: 100 } } })
    for (let i = 0; i < 3; i++) await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted', role: 'main' })
    const failing = () => lines.filter((line) => line.type === 'warn' && /could not renew the lease/.test(line.content))
    const back = () => lines.filter((line) => /lease renewals work again/.test(line.content))

    for (const outage of [1, 2]) {
      await proxy.down()
      await waitFor(() => failing().length >= outage, { what: 'the renewals to fail', timeout: 20_000 })
      // 3 sessions × about 10 intervals a second: still one line for this outage.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      expect(failing(), JSON.stringify(failing())).to.have.length(outage)
      await proxy.up()
      await waitFor(() => back().length >= outage, { what: 'the renewals to work again', timeout: 20_000 })
    }
    expect(back()).to.have.length(2)
  })
})

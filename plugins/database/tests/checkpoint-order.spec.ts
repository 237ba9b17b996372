import { expect } from 'chai'
import { storeDriver } from '@taskward/host'
import { TestHost } from '@taskward/testkit'
import { tmpdir } from 'node:os'

describe('database: a checkpoint copies only frames already on disk in the WAL', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  it('flushes the WAL, covering a commit made while the last flush ran, before copying it into the database', async () => {
    const driver = storeDriver(host.ctx) as any
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('test/warm-up', {})
    // A slow disk: the async flush parks until released.
    const flusher = driver.flusher
    const sync = flusher.sync
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    flusher.sync = async (fd: number) => { await held; return sync(fd) }
    const order: string[] = []
    const syncNow = flusher.syncNow.bind(flusher)
    flusher.syncNow = () => { order.push(`sync after ${driver.writeStats().commits} commits`); syncNow() }
    const exec = driver.db.exec.bind(driver.db)
    driver.db.exec = (sql: string, ...rest: any[]) => {
      if (/wal_checkpoint/.test(sql)) order.push(`checkpoint after ${driver.writeStats().commits} commits`)
      return exec(sql, ...rest)
    }
    try {
      const first = session.append('test/first', {})
      // Written while the first one's flush runs (the disk has not answered yet).
      const second = session.append('test/second', {}, { commit: true, ack: 'written' })
      await second
      const commits = driver.writeStats().commits
      ;(driver as any).checkpoint()
      expect(order).to.deep.equal([`sync after ${commits} commits`, `checkpoint after ${commits} commits`])
      release()
      await first
    } finally {
      release()
      flusher.sync = sync
      flusher.syncNow = syncNow
      driver.db.exec = exec
    }
  })
})

import { expect } from 'chai'
import { storeDriver } from '@taskward/host'
import { TestHost } from '@taskward/testkit'
import { fstatSync, statSync } from 'node:fs'
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
    // The blocking fsync itself, of the WAL's descriptor: what a checkpoint must do first.
    const syncBlocking = flusher.syncBlocking
    flusher.syncBlocking = (fd: number) => {
      order.push(`sync of the WAL after ${driver.writeStats().commits} commits`)
      expect(fstatSync(fd).ino).to.equal(statSync(host.dbPath + '-wal').ino)
      syncBlocking(fd)
    }
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
      expect(order).to.deep.equal([`sync of the WAL after ${commits} commits`, `checkpoint after ${commits} commits`])
      release()
      await first
    } finally {
      release()
      flusher.sync = sync
      flusher.syncBlocking = syncBlocking
      driver.db.exec = exec
    }
  })
})

describe('database: closing a store whose last checkpoint failed', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  it('syncs the database that closing filled from the WAL before the WAL\'s removal is made durable', async () => {
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    for (let i = 0; i < 5; i++) await session.append('test/x', { i })
    const driver = storeDriver(host.ctx) as any
    const order: string[] = []
    const eio = Object.assign(new Error('injected EIO'), { code: 'EIO' })
    driver.flusher.syncBlocking = () => { throw eio }
    const close = driver.db.close.bind(driver.db)
    driver.db.close = () => {
      order.push(`close (the WAL is ${statSync(host.dbPath + '-wal', { throwIfNoEntry: false }) ? 'there' : 'gone'})`)
      return close()
    }
    const syncFile = driver.syncFile
    driver.syncFile = (file: string) => {
      order.push(`sync ${file === host.dbPath ? 'the database' : file}`)
      return syncFile(file)
    }
    await host.stop()
    expect(order).to.deep.equal(['close (the WAL is there)', 'sync the database'])
  })
})

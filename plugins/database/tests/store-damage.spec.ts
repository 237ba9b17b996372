import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { open, readFile, rename, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { TestHost, tempWorkspace, removeTree } from '@taskward/testkit'

const digest = async (file: string) => createHash('sha256').update(await readFile(file)).digest('hex')

/** A data directory holding a real log of `count` events, the host stopped. */
async function storeWithEvents(count: number) {
  const host = await TestHost.boot()
  const session = await host.ctx.sessions.create({ id: 'main', cwd: host.dataDir })
  for (let i = 0; i < count; i++) await session.append('test/x', { i, text: 'y'.repeat(300) })
  await host.stop()
  return host
}

async function refusal(dataDir: string) {
  return TestHost.boot({ dataDir }).then(async (host) => {
    await host.stop()
    return undefined
  }, (error) => error)
}

describe('store: a damaged database is refused, not served', function () {
  this.timeout(120_000)
  let host: TestHost
  let file: string

  before(async () => {
    host = await storeWithEvents(3000)
    file = host.dbPath
  })
  after(async () => {
    await host.dispose()
  })

  const damages: [string, (file: string, size: number) => Promise<void>][] = [
    ['truncated to half', (file, size) => truncate(file, Math.floor(size / 2))],
    ['truncated to 0 bytes', (file) => truncate(file, 0)],
    ['filled with random bytes', (file, size) => writeFile(file, randomBytes(size))],
    ['overwritten with garbage in the middle', async (file, size) => {
      const handle = await open(file, 'r+')
      await handle.write(randomBytes(64 * 1024), 0, 64 * 1024, Math.floor(size / 2))
      await handle.close()
    }],
  ]

  for (const [what, damage] of damages) {
    it(`refuses to start on a database ${what}, with STORE_CORRUPT naming the file and the next steps, writing nothing`, async () => {
      const pristine = await readFile(file)
      try {
        await damage(file, pristine.length)
        const before = await digest(file)
        const error = await refusal(host.dataDir)
        expect(error?.code, String(error?.stack)).to.equal('STORE_CORRUPT')
        expect(error.message).to.include(file)
        expect(error.message).to.include('restore')
        expect(await digest(file)).to.equal(before)
        expect(await stat(`${file}-wal`).catch(() => undefined)).to.equal(undefined)
      } finally {
        await writeFile(file, pristine)
      }
      // The intact file still opens.
      const again = await TestHost.boot({ dataDir: host.dataDir })
      expect((await again.ctx.sessions.get('main')).seq).to.equal(3000)
      await again.stop()
    })
  }

  it('refuses a write-ahead log whose database file is gone', async () => {
    const pristine = await readFile(file)
    try {
      await rename(file, file + '.moved')
      await writeFile(file + '-wal', randomBytes(4096))
      expect((await refusal(host.dataDir))?.code).to.equal('STORE_CORRUPT')
    } finally {
      await removeTree(file + '-wal')
      await removeTree(file + '.moved')
      await writeFile(file, pristine)
    }
  })
})

describe('store: /health at run time', function () {
  this.timeout(60_000)

  it('answers 503 STORE_UNAVAILABLE once the database file is removed under the running host, and refuses appends', async () => {
    const dataDir = await tempWorkspace({}, 'taskward-health-')
    const host = await TestHost.boot({ dataDir })
    try {
      const session = await host.ctx.sessions.create({ cwd: dataDir })
      await session.append('test/x', {})
      const healthy = await fetch(`${host.url}/health`)
      expect(healthy.status).to.equal(200)
      await rename(host.dbPath, host.dbPath + '.elsewhere')
      const failed = await fetch(`${host.url}/health`)
      expect(failed.status).to.equal(503)
      const body = await failed.json() as any
      expect(body).to.include({ ok: false, code: 'STORE_UNAVAILABLE' })
      expect(body.error).to.include('removed')
      const error = await session.append('test/x', {}).then(() => undefined, (error) => error)
      expect(error?.code).to.equal('STORE_UNAVAILABLE')
    } finally {
      await host.stop()
      await removeTree(dataDir)
    }
  })
})

/**
 * The page-1 frame of the WAL's last commit: what a checkpoint writes first. WAL layout: a 32-byte
 * header (page size at 8, salts at 16 and 20), then frames of a 24-byte header (page number at 0,
 * salts at 8 and 12) and one page.
 */
function lastPageOneFrame(wal: Buffer) {
  const pageSize = wal.readUInt32BE(8)
  let found: Buffer | undefined
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== wal.readUInt32BE(16) || wal.readUInt32BE(at + 12) !== wal.readUInt32BE(20)) break
    if (wal.readUInt32BE(at) === 1) found = wal.subarray(at + 24, at + 24 + pageSize)
  }
  return found
}

describe('store: a host killed inside a checkpoint', function () {
  this.timeout(120_000)

  it('starts with every acknowledged event when the header already counts pages that only the WAL holds', async () => {
    const dataDir = await tempWorkspace({}, 'taskward-checkpoint-')
    const copy = await tempWorkspace({}, 'taskward-checkpoint-copy-')
    const host = await TestHost.boot({ dataDir })
    try {
      const session = await host.ctx.sessions.create({ id: 'main', cwd: dataDir })
      for (let i = 0; i < 500; i++) await session.append('test/x', { i, text: 'y'.repeat(300) })
      // The state on disk of a host killed right after a checkpoint wrote page 1: the database file as
      // before the checkpoint, its header from the WAL's last commit, and the whole WAL.
      const wal = await readFile(host.dbPath + '-wal')
      const database = await readFile(host.dbPath)
      const pageOne = lastPageOneFrame(wal)
      expect(pageOne, 'the WAL holds page 1').to.not.equal(undefined)
      pageOne!.copy(database, 0)
      const pageSize = database.readUInt16BE(16)
      expect(database.readUInt32BE(28) * pageSize, 'the header counts more than the file holds').to.be.greaterThan(database.length)
      await writeFile(join(copy, 'taskward.db'), database)
      await writeFile(join(copy, 'taskward.db-wal'), wal)
    } finally {
      await host.stop()
    }
    try {
      const again = await TestHost.boot({ dataDir: copy })
      try {
        const session = await again.ctx.sessions.get('main')
        expect(session.seq).to.equal(500)
        await session.append('test/x', { after: true })
      } finally {
        await again.stop()
      }
    } finally {
      await removeTree(dataDir)
      await removeTree(copy)
    }
  })
})

describe('store: a truncated database next to a write-ahead log that is not its own', function () {
  this.timeout(120_000)

  // The header check skips its page count only for a WAL that a checkpoint was copying into THIS
  // file. A WAL moved in from another data directory holds frames too: SQLite replays them onto the
  // remains of the truncated file, and the host started "healthy" on the other store's contents.
  it('is refused as truncated, not started on the other WAL', async () => {
    const dataDir = await tempWorkspace({}, 'taskward-foreign-wal-')
    const copy = await tempWorkspace({}, 'taskward-foreign-wal-copy-')
    const first = await TestHost.boot({ dataDir })
    const other = await TestHost.boot()
    try {
      const session = await first.ctx.sessions.create({ id: 'main', cwd: dataDir })
      for (let i = 0; i < 3000; i++) await session.append('test/x', { i, text: 'y'.repeat(300) })
      await first.stop()
      const database = await readFile(first.dbPath)
      const theirs = await other.ctx.sessions.create({ id: 'other', cwd: dataDir })
      for (let i = 0; i < 5; i++) await theirs.append('test/x', { i })
      const foreign = await readFile(other.dbPath + '-wal')
      const pageSize = database.readUInt16BE(16)
      expect(database.readUInt32BE(28) * pageSize, 'the header counts the whole file').to.equal(database.length)
      await writeFile(join(copy, 'taskward.db'), database.subarray(0, Math.floor(database.length / 2)))
      await writeFile(join(copy, 'taskward.db-wal'), foreign)
    } finally {
      await other.dispose()
    }
    try {
      const error = await refusal(copy)
      expect(error?.code, 'started on a WAL of another database').to.equal('STORE_CORRUPT')
      expect(error.message).to.include('truncated')
    } finally {
      await first.dispose()
      await removeTree(dataDir)
      await removeTree(copy)
    }
  })
})

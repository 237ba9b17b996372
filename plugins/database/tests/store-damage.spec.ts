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

import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort, TestHost, tempWorkspace, removeTree } from '@taskward/testkit'
import { DataDirLock, readHolder } from '../src'
import { hostProcess, integrityCheck, npmStart } from './store-processes'

async function snapshot(dir: string) {
  const files: Record<string, string> = {}
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    // Subdirectories (the host's default workspace root) are compared as a whole listing.
    files[entry.name] = entry.isDirectory()
      ? `dir:${JSON.stringify(await snapshot(join(dir, entry.name)))}`
      : createHash('sha256').update(await readFile(join(dir, entry.name))).digest('hex')
  }
  return files
}

async function allEvents(dataDir: string, sessionId: string) {
  const host = await TestHost.boot({ dataDir })
  try {
    const session = await host.ctx.sessions.get(sessionId)
    const events = []
    for await (const event of session.events(0)) events.push(event)
    return events
  } finally {
    await host.stop()
  }
}

describe('store: one host per data directory', function () {
  this.timeout(240_000)
  let dataDir: string

  beforeEach(async () => {
    dataDir = await tempWorkspace({}, 'taskward-lock-')
  })
  afterEach(async () => {
    await removeTree(dataDir)
  })

  it('refuses a second host (npm start) at once, naming the holder, and writes nothing; after SIGKILL of the first a new host has every acknowledged append', async () => {
    const first = hostProcess(dataDir, 'main', 'append')
    try {
      const [, pid] = await first.waitFor(/ready (\d+)/)
      await first.waitFor(/acked 50\n/)

      const before = await snapshot(dataDir).then((files) => Object.keys(files))
      const lockBefore = await readFile(join(dataDir, 'taskward.db.lock'), 'utf8')
      const second = npmStart(dataDir, await freePort())
      const exit = await second.exited
      expect(exit.code, second.output).to.equal(52)
      expect(second.output).to.include('is in use by another Taskward host')
      expect(second.output).to.include(`pid ${pid}`)
      expect(second.output).to.include('MySQL/MariaDB')
      // The refused host created no file and left the lock alone.
      expect(Object.keys(await snapshot(dataDir))).to.deep.equal(before)
      expect(await readFile(join(dataDir, 'taskward.db.lock'), 'utf8')).to.equal(lockBefore)

      await first.waitFor(/acked 150\n/)
      first.child.kill('SIGKILL')
      await first.exited
    } finally {
      first.child.kill('SIGKILL')
    }
    const acked = first.acked
    expect(acked.length).to.be.greaterThan(100)
    // The killed host's lock is still on disk and is recovered without manual steps.
    expect(readHolder(join(dataDir, 'taskward.db.lock'))).to.not.equal(undefined)
    const events = await allEvents(dataDir, 'main')
    expect(events.map((event) => event.seq)).to.deep.equal(events.map((_, i) => i))
    expect(events.length).to.be.greaterThan(Math.max(...acked))
    expect(await integrityCheck(join(dataDir, 'taskward.db'))).to.equal('ok')
  })

  it('refuses a second host in the same process, and hands the lock over once the first stops', async () => {
    const first = await TestHost.boot({ dataDir })
    try {
      const error = await TestHost.boot({ dataDir }).then(() => undefined, (error) => error)
      expect(error?.code).to.equal('STORE_LOCKED')
      expect(error?.details?.holder?.pid).to.equal(process.pid)
    } finally {
      await first.stop()
    }
    const again = await TestHost.boot({ dataDir })
    await again.stop()
  })

  it('takes over a lock whose pid now belongs to another process, and never one whose holder runs', async () => {
    const file = join(dataDir, 'taskward.db.lock')
    // pid 1 runs, but it did not start when this lock says: a pid reused after the holder died.
    await writeFile(file, JSON.stringify({ pid: 1, hostname: (await import('node:os')).hostname(), processStart: '1', startedAt: '2020-01-01T00:00:00Z', nonce: 'old' }))
    const lock = new DataDirLock(file, 'test dir')
    lock.acquire()
    expect((readHolder(file) as any).pid).to.equal(process.pid)
    const other = new DataDirLock(file, 'test dir')
    expect(() => other.acquire()).to.throw().with.property('code', 'STORE_LOCKED')
    other.release()
    expect((readHolder(file) as any).pid).to.equal(process.pid)
    lock.release()
    expect(readHolder(file)).to.equal(undefined)
    // A lock file that is not a lock at all (e.g. cut short by a power loss) is taken over as well.
    await writeFile(file, '')
    lock.acquire()
    lock.release()
  })

  it('a directory that cannot hold the lock is STORE_UNAVAILABLE naming it, never a raw ENOENT or a "damaged" database', async () => {
    const missing = new DataDirLock(join(dataDir, 'gone', 'taskward.db.lock'), 'The data directory gone')
    const error = (() => { try { missing.acquire() } catch (caught) { return caught as any } })()
    expect(error?.code, String(error)).to.equal('STORE_UNAVAILABLE')
    expect(error.message).to.include(`The data directory gone cannot hold the lock file ${join(dataDir, 'gone', 'taskward.db.lock')} (ENOENT`)
    expect(error.details).to.include({ cause: 'ENOENT' })
    expect(missing.held).to.equal(false)

    // A host started on a data directory whose lock is a directory: refused for that, not for damage.
    await mkdir(join(dataDir, 'taskward.db.lock'))
    const refusal = await TestHost.boot({ dataDir }).then(() => undefined, (caught) => caught)
    expect(refusal?.code, String(refusal)).to.equal('STORE_UNAVAILABLE')
    expect(refusal.message).to.include('(EISDIR')
    expect(await readdir(dataDir)).to.deep.equal(['taskward.db.lock'])
  })
})

describe('store: durable acknowledgements under SIGKILL (WAL)', function () {
  this.timeout(600_000)

  it('loses no acknowledged append over 20 kills at random moments; seqs stay contiguous and integrity_check passes', async () => {
    const dataDir = await tempWorkspace({}, 'taskward-kill-')
    try {
      const acked: number[] = []
      for (let round = 0; round < 20; round++) {
        const host = hostProcess(dataDir, 'main', 'append')
        try {
          await host.waitFor(/ready \d+/)
          await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 400))
        } finally {
          host.child.kill('SIGKILL')
        }
        await host.exited
        acked.push(...host.acked)
      }
      expect(acked.length).to.be.greaterThan(100)
      const events = await allEvents(dataDir, 'main')
      expect(events.map((event) => event.seq)).to.deep.equal(events.map((_, i) => i))
      const stored = new Set(events.map((event) => event.seq))
      expect(acked.filter((seq) => !stored.has(seq))).to.deep.equal([])
      expect(await integrityCheck(join(dataDir, 'taskward.db'))).to.equal('ok')
    } finally {
      await removeTree(dataDir)
    }
  })
})

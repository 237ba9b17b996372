import { lstatSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { hashOutlivesRead, resolveStampLimits, type EntryVersion } from '@taskward/protocol'
import { stampWorkspace } from '../src'
import { SAVED_TABLES, StatCacheStore, type HashTable } from '../src/stat-cache'
import { makeTempDir, removeTree, startWorkspace, writeTree } from './fixtures'

const limits = resolveStampLimits()
const HOUR_AGO = Date.now() / 1000 - 3600

/** The saved table of the only workspace in `dir`, as rows. */
function savedRows(dir: string, workspaceKey: string): string[][] {
  return JSON.parse(readFileSync(join(dir, `${workspaceKey}.json`), 'utf8')).rows
}

/** Replace the saved hash of `path` by a wrong one, keeping its version: a reused entry shows in the digest. */
function poison(dir: string, workspaceKey: string, path: string) {
  const file = join(dir, `${workspaceKey}.json`)
  const table = JSON.parse(readFileSync(file, 'utf8'))
  const row = table.rows.find((r: string[]) => r[0] === path)
  expect(row, `a saved row for ${path}`).to.not.equal(undefined)
  row[7] = 'f'.repeat(64)
  writeFileSync(file, JSON.stringify(table))
}

describe('workspace stamp: stat cache', () => {
  let root: string
  let cacheDir: string

  beforeEach(() => {
    root = makeTempDir()
    cacheDir = makeTempDir('taskward-stat-cache-')
    writeTree(root, { 'old.txt': 'old', 'src/also-old.txt': 'also old' })
    // Written an hour ago: past the racy window, so their hashes may be kept.
    for (const path of ['old.txt', 'src/also-old.txt']) utimesSync(join(root, path), HOUR_AGO, HOUR_AGO)
  })

  afterEach(() => {
    removeTree(root)
    removeTree(cacheDir)
  })

  it('keeps no hash of a file written within the racy window (its ctime is now, whatever its mtime says)', async () => {
    const first = new StatCacheStore(cacheDir)
    const stamp = await stampWorkspace(root, limits, {}, { cache: first })
    await first.flush()
    expect(() => savedRows(cacheDir, stamp.workspaceKey)).to.throw(/ENOENT/)
  })

  it('hashes again a file whose ctime changed though content size and mtime were put back', async () => {
    const store = new StatCacheStore(cacheDir)
    const before = await stampWorkspace(root, limits, {}, { cache: store })
    writeFileSync(join(root, 'old.txt'), 'new') // same size
    utimesSync(join(root, 'old.txt'), HOUR_AGO, HOUR_AGO)
    const after = await stampWorkspace(root, limits, {}, { cache: store })
    expect(after.digest).to.not.equal(before.digest)
    expect(after.digest).to.equal((await stampWorkspace(root, limits)).digest)
  })
})

describe('workspace stamp: stat cache over a tree older than the racy window', function () {
  // ctime cannot be set back: a tree old enough to be cached is one written RACY_MARGIN ago.
  this.timeout(20_000)
  let root: string
  let cacheDir: string
  let workspaceKey: string

  before(async () => {
    root = makeTempDir()
    writeTree(root, { 'kept.txt': 'kept content', 'src/kept-too.txt': 'also kept', 'empty.txt': '' })
    await new Promise((resolve) => setTimeout(resolve, 2_100))
  })

  after(() => removeTree(root))

  beforeEach(async () => {
    cacheDir = makeTempDir('taskward-stat-cache-')
    const store = new StatCacheStore(cacheDir)
    workspaceKey = (await stampWorkspace(root, limits, {}, { cache: store })).workspaceKey
    await store.flush()
  })

  afterEach(() => removeTree(cacheDir))

  it('saves the hash of every file of the tree, keyed by path and version', () => {
    expect(savedRows(cacheDir, workspaceKey).map((row) => row[0]).sort()).to.deep.equal(['empty.txt', 'kept.txt', 'src/kept-too.txt'])
  })

  it('reads the saved table after a restart and reuses it for files whose version is unchanged', async () => {
    poison(cacheDir, workspaceKey, 'kept.txt')
    const honest = await stampWorkspace(root, limits)
    // A new store is a restarted host: it can only know the hash from the saved table.
    const reused = await stampWorkspace(root, limits, {}, { cache: new StatCacheStore(cacheDir) })
    expect(reused.digest, 'the poisoned hash was used, so the saved one is').to.not.equal(honest.digest)
  })

  it('never reuses a saved hash once the file is touched (its ctime moves, whatever mtime says)', async () => {
    poison(cacheDir, workspaceKey, 'kept.txt')
    const path = join(root, 'kept.txt')
    const { atime, mtime } = lstatSync(path)
    utimesSync(path, atime, mtime) // same times back: only ctime changes
    const cache = new StatCacheStore(cacheDir)
    const stamp = await stampWorkspace(root, limits, {}, { cache })
    await cache.flush()
    expect(stamp.digest).to.equal((await stampWorkspace(root, limits)).digest)
  })

  it('ignores a table that is not one it wrote, and stamps as without it', async () => {
    writeFileSync(join(cacheDir, `${workspaceKey}.json`), '{"format":"something else","rows":[]}')
    const errors: unknown[] = []
    const cache = new StatCacheStore(cacheDir, (error) => errors.push(error))
    const stamp = await stampWorkspace(root, limits, {}, { cache })
    await cache.flush()
    expect(stamp.digest).to.equal((await stampWorkspace(root, limits)).digest)
    expect(errors).to.have.length(1)
  })
})

describe('hashOutlivesRead (the racy-clean rule)', () => {
  const version = (mtimeNs: bigint, ctimeNs: bigint): EntryVersion => ({ dev: 1n, ino: 2n, mode: 0o100644n, size: 3n, mtimeNs, ctimeNs })
  const read = 10_000_000_000n

  it('keeps a hash only of a file whose mtime and ctime are both older than the margin before the read', () => {
    expect(hashOutlivesRead(version(1n, 1n), read)).to.equal(true)
    expect(hashOutlivesRead(version(read - 1_000_000n, 1n), read), 'mtime 1 ms before the read').to.equal(false)
    expect(hashOutlivesRead(version(1n, read - 1_999_999_999n), read), 'ctime within 2 s').to.equal(false)
    expect(hashOutlivesRead(version(1n, read + 5n), read), 'ctime in the future').to.equal(false)
  })
})

describe('workspace service: the data directory inside the workspace', () => {
  const saved = process.env.TASKWARD_DATA
  let root: string

  beforeEach(() => {
    root = makeTempDir()
    writeTree(root, { 'src/a.ts': 'a', 'data/taskward.db': 'events' })
    process.env.TASKWARD_DATA = join(root, 'data')
  })

  afterEach(() => {
    if (saved === undefined) delete process.env.TASKWARD_DATA
    else process.env.TASKWARD_DATA = saved
    removeTree(root)
  })

  it('is left out of every stamp, so the host writing its database is not a workspace change', async () => {
    const ctx = await startWorkspace()
    try {
      const before = await ctx.workspace.stamp(root)
      expect(before.files).to.equal(1)
      writeFileSync(join(root, 'data/taskward.db'), 'more events')
      writeFileSync(join(root, 'data/new-file'), 'x')
      const after = await ctx.workspace.stamp(root)
      expect(after).to.deep.equal(before)
    } finally {
      await ctx.stop()
    }
  })
})

describe('stat cache store: bounded on disk', () => {
  let dir: string
  beforeEach(() => {
    dir = makeTempDir('taskward-stat-cache-')
  })
  afterEach(() => removeTree(dir))

  const version: EntryVersion = { dev: 1n, ino: 2n, mode: 0o100644n, size: 3n, mtimeNs: 4n, ctimeNs: 5n }
  const tableOf = (hash: number): HashTable => new Map([['a.txt', { version, hash: Buffer.alloc(32, hash) }]])
  const savedHash = (dir: string, key: string) => savedRows(dir, key)[0][7]

  it('keeps only the most recently saved tables of the workspaces a long-running host has seen', async function () {
    this.timeout(20_000)
    const store = new StatCacheStore(dir)
    const keys = Array.from({ length: SAVED_TABLES + 100 }, (_, i) => i.toString(16).padStart(64, '0'))
    for (const key of keys) await store.save(key, new Map([['a.txt', { version, hash: Buffer.alloc(32) }]]))
    await store.flush()
    const saved = readdirSync(dir)
    expect(saved.length).to.equal(SAVED_TABLES)
    expect(saved).to.include(`${keys.at(-1)}.json`)
    expect(saved).to.not.include(`${keys[0]}.json`)
  })

  it('writes a workspace saved many times while its write waits once, with its newest table', async () => {
    const store = new StatCacheStore(dir)
    const key = 'a'.repeat(64)
    // Stamps in a row on a busy host: each save before the first write ended.
    for (let i = 1; i <= 50; i++) void store.save(key, tableOf(i))
    await store.flush()
    expect(store.written).to.be.at.most(2)
    expect(savedHash(dir, key)).to.equal(Buffer.alloc(32, 50).toString('hex'))
    // A save after the writer went idle is written too (none is left waiting).
    await store.save(key, tableOf(51))
    expect(savedHash(dir, key)).to.equal(Buffer.alloc(32, 51).toString('hex'))
    // The table is read back by a new store (a restart), and one not yet written is the one used.
    expect(new StatCacheStore(dir).table(key).get('a.txt')!.hash[0]).to.equal(51)
    void store.save(key, tableOf(52))
    expect(store.table(key).get('a.txt')!.hash[0]).to.equal(52)
    await store.flush()
  })

  it('after a restart keeps the tables saved before it, the oldest first to go, and removes a crash\'s temp files', async () => {
    const keys = Array.from({ length: SAVED_TABLES }, (_, i) => i.toString(16).padStart(64, '0'))
    const first = new StatCacheStore(dir)
    for (const key of keys) await first.save(key, tableOf(1))
    // The first key's table is the oldest on disk (mtime), whatever order readdir lists them in.
    utimesSync(join(dir, `${keys[0]}.json`), HOUR_AGO, HOUR_AGO)
    writeFileSync(join(dir, `${keys[1]}.json.999999.tmp`), 'half a table')
    const second = new StatCacheStore(dir)
    await second.save('f'.repeat(64), tableOf(2))
    const saved = readdirSync(dir)
    expect(saved.length).to.equal(SAVED_TABLES)
    expect(saved).to.not.include(`${keys[0]}.json`)
    expect(saved).to.include(`${keys[1]}.json`)
    expect(saved.filter((name) => name.endsWith('.tmp'))).to.deep.equal([])
  })

  it('goes on saving past a leftover temp entry it cannot remove, and after its directory was removed', async () => {
    const errors: unknown[] = []
    // A directory named like a crash's temp file: rmSync refuses it (EISDIR).
    mkdirSync(join(dir, `${'c'.repeat(64)}.json.1.tmp`))
    const store = new StatCacheStore(dir, (error) => errors.push(error))
    await store.save('a'.repeat(64), tableOf(1))
    expect(readdirSync(dir)).to.include(`${'a'.repeat(64)}.json`)
    // An operator clears the cache while the host runs: the next save makes the directory again.
    removeTree(dir)
    await store.save('b'.repeat(64), tableOf(2))
    expect(readdirSync(dir)).to.deep.equal([`${'b'.repeat(64)}.json`])
    expect(errors).to.deep.equal([])
  })

  it('reports a table it cannot write and goes on with the next', async () => {
    const errors: unknown[] = []
    const store = new StatCacheStore(join(dir, 'not-a-directory'), (error) => errors.push(error))
    writeFileSync(join(dir, 'not-a-directory'), 'a file where the directory should be')
    await store.save('a'.repeat(64), tableOf(1))
    await store.save('b'.repeat(64), tableOf(2))
    expect(errors).to.have.length(2)
    expect(store.written).to.equal(0)
  })
})

import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { hashOutlivesRead, sameVersion, type EntryVersion } from '@taskward/protocol'

/** A file's content hash and the version (device, inode, mode, size, mtime, ctime) it was read at. */
export interface CachedHash {
  version: EntryVersion
  hash: Buffer
}

/** Cached hashes of one workspace by path (root-relative bytes as latin1: one character per byte, so distinct names stay distinct). */
export type HashTable = Map<string, CachedHash>

/**
 * What one capture reuses and records: hashes of files whose version is unchanged since the table
 * `known` was made, and the hashes this capture may pass on (those that outlive their read, see
 * `hashOutlivesRead`), for the next capture or the next stamp.
 */
export class CaptureHashes {
  readonly next: HashTable = new Map()
  /** Hashes computed (not reused) that were recorded: the table changed. */
  recorded = 0

  constructor(private readonly known: HashTable) {}

  /** The cached hash of `key` if its version is exactly `version`. */
  reuse(key: string, version: EntryVersion): Buffer | undefined {
    const cached = this.known.get(key)
    if (!cached || !sameVersion(cached.version, version)) return undefined
    this.next.set(key, cached)
    return cached.hash
  }

  /** A hash just read from a file of `version`, begun at `readAtNs` (wall clock). */
  record(key: string, version: EntryVersion, hash: Buffer, readAtNs: bigint): void {
    if (!hashOutlivesRead(version, readAtNs)) return
    this.next.set(key, { version, hash })
    this.recorded++
  }

  /** Whether `next` differs from `known` (worth saving). */
  get changed(): boolean {
    return this.recorded > 0 || this.next.size !== this.known.size
  }
}

const FORMAT = 'taskward-stat-cache 1'
/**
 * Tables kept in memory: the most recently stamped workspaces, up to this many files in all (an entry
 * costs a few hundred bytes; a workspace of more files is still kept while it is the newest), and no
 * more than MEMORY_WORKSPACES of them. The rest are read back from disk when stamped again.
 */
const MEMORY_ENTRIES = 400_000
const MEMORY_WORKSPACES = 16
/** Saved tables kept on disk: the most recently saved, so a host that saw many workspaces stays bounded. */
export const SAVED_TABLES = 256

type Row = [key: string, dev: string, ino: string, mode: string, size: string, mtimeNs: string, ctimeNs: string, hash: string]

/**
 * The stat cache of every workspace this process stamps: a table per workspace key, the most recently
 * used in memory, each saved as `<directory>/<workspaceKey>.json` (written whole, then renamed, so a
 * crash leaves the old table or the new one) and read back after a restart. Without a directory it is
 * memory only. The table is an optimization, never an authority on its own: a file is hashed again
 * whenever its version differs, and a table that cannot be read is an empty one.
 */
export class StatCacheStore {
  private readonly tables = new Map<string, HashTable>()
  /** Tables not written yet, by workspace key: the latest of each (a newer save replaces one still waiting). */
  private readonly dirty = new Map<string, HashTable>()
  /** The writer of `dirty`, one table at a time, while there is anything to write. */
  private writing?: Promise<void>
  /** The saved tables' keys, least recently saved first: read from the directory once, then kept here. */
  private saved?: Set<string>
  /** Tables written to disk since start (diagnostics and tests: saves coalesce). */
  written = 0

  constructor(private readonly directory?: string, private readonly onError: (error: unknown) => void = () => {}) {}

  /** The table of `workspaceKey` (empty when none was saved). */
  table(workspaceKey: string): HashTable {
    let table = this.tables.get(workspaceKey)
    if (table) {
      // Most recently used last.
      this.tables.delete(workspaceKey)
    } else {
      table = this.dirty.get(workspaceKey) ?? this.read(workspaceKey)
    }
    this.tables.set(workspaceKey, table)
    this.evict()
    return table
  }

  /**
   * Keep `table` as the workspace's table, and save it in the background. One writer drains the
   * tables waiting, one file at a time, and a workspace saved again before its turn is written once,
   * with its newest table: a host stamping hundreds of workspaces keeps a handful of file-system calls
   * in libuv's pool, not thousands (its file tools and the store's flushes wait in the same queue).
   * Resolves once the writer is idle: every table waiting at that moment and any saved meanwhile is
   * written (or failed: `onError`); never rejects.
   */
  save(workspaceKey: string, table: HashTable): Promise<void> {
    this.tables.delete(workspaceKey)
    this.tables.set(workspaceKey, table)
    this.evict()
    if (!this.directory) return Promise.resolve()
    this.dirty.delete(workspaceKey)
    this.dirty.set(workspaceKey, table)
    this.writing ??= this.drain(this.directory)
    return this.writing
  }

  /** The writer is idle: every save so far has finished (for a clean shutdown and for tests; a host still saving keeps it waiting). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing
  }

  private async drain(directory: string): Promise<void> {
    // Begun after `save` holds this promise as `writing` (a drain that ended at once would leave it set).
    await undefined
    for (;;) {
      const next = this.dirty.entries().next()
      // Ended in the same turn as the last check: a save after it starts a new writer.
      if (next.done) {
        this.writing = undefined
        return
      }
      const [workspaceKey, table] = next.value
      this.dirty.delete(workspaceKey)
      try {
        const saved = this.saved ??= savedTables(directory)
        // Again before each write: the directory may have been removed since (an operator clearing it).
        mkdirSync(directory, { recursive: true, mode: 0o700 })
        const file = join(directory, `${workspaceKey}.json`)
        const temp = `${file}.${process.pid}.tmp`
        await writeFile(temp, serialize(workspaceKey, table), { mode: 0o600 })
        await rename(temp, file)
        this.written++
        saved.delete(workspaceKey)
        saved.add(workspaceKey)
        // The least recently saved beyond SAVED_TABLES, by this process's own record: no directory listing.
        for (const oldest of saved) {
          if (saved.size <= SAVED_TABLES) break
          saved.delete(oldest)
          await rm(join(directory, `${oldest}.json`), { force: true })
        }
      } catch (error) {
        this.onError(error)
      }
    }
  }

  private evict() {
    let entries = 0
    for (const table of this.tables.values()) entries += table.size
    // Least recently used first; the newest stays whatever its size.
    for (const [key, table] of this.tables) {
      if (this.tables.size <= 1 || (this.tables.size <= MEMORY_WORKSPACES && entries <= MEMORY_ENTRIES)) break
      this.tables.delete(key)
      entries -= table.size
    }
  }

  private read(workspaceKey: string): HashTable {
    if (!this.directory) return new Map()
    let text: string
    try {
      mkdirSync(this.directory, { recursive: true, mode: 0o700 })
      text = readFileSync(join(this.directory, `${workspaceKey}.json`), 'utf8')
    } catch {
      return new Map()
    }
    try {
      return deserialize(workspaceKey, text)
    } catch (error) {
      this.onError(error)
      return new Map()
    }
  }
}

function serialize(workspaceKey: string, table: HashTable): string {
  const rows: Row[] = []
  for (const [key, { version: v, hash }] of table) {
    rows.push([key, String(v.dev), String(v.ino), String(v.mode), String(v.size), String(v.mtimeNs), String(v.ctimeNs), hash.toString('hex')])
  }
  return JSON.stringify({ format: FORMAT, workspaceKey, rows })
}

const DECIMAL = /^-?\d{1,20}$/
const HASH = /^[0-9a-f]{64}$/

function deserialize(workspaceKey: string, text: string): HashTable {
  const parsed = JSON.parse(text) as { format?: unknown, workspaceKey?: unknown, rows?: unknown }
  if (parsed.format !== FORMAT || parsed.workspaceKey !== workspaceKey || !Array.isArray(parsed.rows)) {
    throw new Error(`the stat cache of workspace ${workspaceKey} is not one this version wrote; it is ignored and rebuilt`)
  }
  const table: HashTable = new Map()
  for (const row of parsed.rows as unknown[]) {
    if (!Array.isArray(row) || row.length !== 8 || typeof row[0] !== 'string'
      || !row.slice(1, 7).every((field) => typeof field === 'string' && DECIMAL.test(field)) || typeof row[7] !== 'string' || !HASH.test(row[7])) {
      throw new Error(`the stat cache of workspace ${workspaceKey} has a malformed row; it is ignored and rebuilt`)
    }
    const [key, dev, ino, mode, size, mtimeNs, ctimeNs, hash] = row as Row
    table.set(key, {
      version: { dev: BigInt(dev), ino: BigInt(ino), mode: BigInt(mode), size: BigInt(size), mtimeNs: BigInt(mtimeNs), ctimeNs: BigInt(ctimeNs) },
      hash: Buffer.from(hash, 'hex'),
    })
  }
  return table
}

/**
 * The tables saved in `directory` before this process, least recently written first (created if
 * missing), and a crash's leftover temp files removed. Once per process, synchronously: a directory of
 * at most SAVED_TABLES files in the data directory.
 */
function savedTables(directory: string): Set<string> {
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const tables: { key: string, mtimeMs: number }[] = []
  for (const name of readdirSync(directory)) {
    const path = join(directory, name)
    // An entry that cannot be removed or looked at (a directory named *.tmp, another user's file) is
    // left as it is: the cache goes on saving.
    try {
      if (name.endsWith('.tmp') && !name.includes(`.${process.pid}.`)) rmSync(path, { force: true })
      else if (name.endsWith('.json')) tables.push({ key: name.slice(0, -5), mtimeMs: statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0 })
    } catch {}
  }
  return new Set(tables.sort((a, b) => a.mtimeMs - b.mtimeMs).map(({ key }) => key))
}

import { SQLiteDriver } from '@minatojs/driver-sqlite'
import Schema from 'schemastery'
import init from '@minatojs/sql.js'
import { TaskwardError } from '@taskward/protocol'
import { closeSync, fdatasyncSync, fstatSync, linkSync, openSync, statSync, unlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname } from 'node:path'
import { randomBytes } from 'node:crypto'
import { DataDirLock } from './lock'
import { checkFileHeader, corrupt } from './file-check'
import { Flusher, syncDirectory, syncFile } from './flusher'

export type Durability = 'fsync' | 'os'

declare module 'cordis' {
  interface Events {
    /** The store refused to start (`STORE_LOCKED`, `STORE_CORRUPT`): nothing was written. */
    'database/refused'(error: TaskwardError): void
  }
}

export interface StoreHealth {
  ok: boolean
  code?: 'STORE_CORRUPT' | 'STORE_UNAVAILABLE'
  message?: string
}

/** Check the WAL's size every this many commits; checkpoint past CHECKPOINT_BYTES. */
const CHECKPOINT_EVERY = 256
const CHECKPOINT_BYTES = 64 << 20
/** SQLite's page cache, KiB (filled only as pages are used). */
const CACHE_KIB = 32 * 1024

// `__filename` in the CommonJS build (where import.meta is empty), import.meta.url in ESM and the sources.
const require = createRequire(typeof __filename === 'string' ? __filename : import.meta.url)

/**
 * The embedded store: minato's SQLite driver (sql.js, wasm) made safe for one host per data directory.
 *
 * - start: take the data directory's lock, check the file's header, open it in exclusive WAL mode,
 *   run `quick_check`; any refusal stops the start before a byte is written.
 * - every write is acknowledged only once durable (`fsync`: flushed with group commit; `os`: handed
 *   to the kernel, which the engine's plain `pwrite` already does).
 * - checkpoints are the host's own (autocheckpoint off): WAL frames are copied into the database and
 *   the database is synced before the next write may restart the WAL, since the engine's own syncs
 *   are no-ops.
 * - a store error at run time (I/O, corruption, the file removed or replaced) is remembered and
 *   reported by `health()`; writes are refused from then on.
 */
export class TaskwardSQLiteDriver extends (SQLiteDriver as any as typeof SQLiteDriver) {
  // The base driver's schema would strip `durability` from the config.
  static override Config = Schema.object({
    path: Schema.string().required(),
    durability: Schema.union(['fsync', 'os'] as const).default('fsync'),
  })

  declare config: SQLiteDriver.Config & { durability: Durability }
  lock!: DataDirLock
  durability: Durability = 'fsync'
  private flusher?: Flusher
  private dbFd?: number
  private commits = 0
  private recorded?: TaskwardError
  opened = false

  /**
   * The store failure every later write is refused with. A move (`file-moved`) is looked at again
   * each time a write asks: once the same file is back at its path the refusal is lifted — with or
   * without a GET /health in between. Two stat calls, only while a move is remembered.
   */
  get failure(): TaskwardError | undefined {
    if (this.recorded?.details?.reason === 'file-moved' && this.dbFd !== undefined && this.atItsPath() === 'same') {
      this.recorded = undefined
      this.logger.info('the database %s is back at its path; writes are acknowledged again', this.path)
    }
    return this.recorded
  }

  get directory() {
    return dirname(this.path)
  }

  /** Commits and flushes (fsyncs of the WAL) since start, and the WAL's size now: for benchmarks and diagnostics. */
  writeStats() {
    let walBytes = 0
    try {
      walBytes = statSync(this.path + '-wal').size
    } catch {}
    return { commits: this.commits, flushes: this.flusher?.flushes ?? 0, walBytes }
  }

  /** The latest WAL flushes' waits (ms; none with durability os): for `/health?verbose`. */
  recentFlushMs(): number[] {
    return this.flusher?.recentFlushMs() ?? []
  }

  override async start() {
    this.path = this.config.path
    this.durability = this.config.durability ?? 'fsync'
    this.lock = new DataDirLock(`${this.path}.lock`, `The data directory ${this.directory}`)
    try {
      this.lock.acquire()
      if (checkFileHeader(this.path) === 'missing') await this.createFile()
      await super.start()
      this.opened = true
      // Exclusive locking before the first read: the WAL index lives in this process's memory (no
      // -shm file), and nothing else may read the file behind this host's back anyway.
      this.pragma('PRAGMA locking_mode = EXCLUSIVE')
      this.verify()
      this.pragma('PRAGMA journal_mode = WAL')
      this.pragma('PRAGMA wal_autocheckpoint = 0')
      // 2 MB (the default) sent index-page reads of hundreds of live sessions back to the file, on the host's thread.
      this.pragma(`PRAGMA cache_size = -${CACHE_KIB}`)
      this.dbFd = openSync(this.path, 'r')
      this.flusher = new Flusher(this.path + '-wal', this.directory)
    } catch (error) {
      await this.abandon()
      const refusal = error instanceof TaskwardError ? error : corrupt(this.path, String((error as Error)?.message ?? error))
      this.refuse(refusal)
      throw refusal
    }
  }

  /** A new database appears complete or not at all: built and synced under a temp name, then linked in. */
  private async createFile() {
    const temp = `${this.path}.${randomBytes(6).toString('hex')}.new`
    const sqlite = await init({ locateFile: (file: string) => require.resolve('@minatojs/sql.js/dist/' + file) })
    const db = new sqlite.Database(temp)
    try {
      db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS taskward_store (key TEXT PRIMARY KEY, value TEXT)')
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    } finally {
      db.close()
    }
    try {
      syncFile(temp)
      linkSync(temp, this.path)
      syncDirectory(this.directory)
    } finally {
      for (const leftover of [temp, temp + '-wal', temp + '-shm']) try { unlinkSync(leftover) } catch {}
    }
  }

  private verify() {
    let rows: string[]
    try {
      rows = this.db.exec('PRAGMA quick_check')[0]?.values.map((row) => String(row[0])) ?? []
    } catch (error: any) {
      throw corrupt(this.path, `SQLite cannot read it (${error?.message ?? error})`)
    }
    if (rows.length !== 1 || rows[0] !== 'ok') throw corrupt(this.path, `quick_check found: ${rows.slice(0, 3).join('; ')}`)
  }

  private pragma(sql: string) {
    this.db.exec(sql)
  }

  /** Undo a start that was refused: close what was opened, release the lock (never someone else's). */
  private async abandon() {
    if (this.opened) {
      try { this.db.close() } catch {}
      this.opened = false
    }
    this.lock?.release()
  }

  /** The refusal itself is logged once, by cordis, as the start's error (under `npm start`: `CODE: message`). */
  private refuse(error: TaskwardError) {
    this.ctx.emit(this.ctx, 'database/refused', error)
    // Under the cordis CLI (`npm start`), the host ends with it: the daemon does not restart code 52.
    if ((this.ctx as any).get('loader')) setTimeout(() => process.exit(52), 50)
  }

  /**
   * Synchronous on purpose: cordis does not await dispose listeners, and a host restarted in the same
   * process must find the file closed and the lock released.
   */
  override async stop() {
    if (!this.opened) return
    this.opened = false
    try {
      // Copy the WAL into the database and sync it while the WAL still holds the frames; closing
      // then removes the WAL.
      if (!this.failure) this.checkpoint()
    } catch (error) {
      this.logger.warn('the last checkpoint failed (closing the database copies the WAL into it all the same; run `npm run doctor` before the next start): %s', error)
    }
    try {
      // Closing copies what is left of the WAL into the database and removes the WAL (a failed store,
      // a failed checkpoint): the database is synced before the WAL's removal is made durable, so a
      // power loss never finds the WAL gone and the database without its pages.
      this.db.close()
      this.syncFile(this.path)
      syncDirectory(this.directory)
    } finally {
      this.flusher?.close()
      if (this.dbFd !== undefined) closeSync(this.dbFd)
      this.dbFd = undefined
      this.lock.release()
    }
  }

  private checkpoint() {
    // Frames written after the last flush began (the commits that did not wait for it) reach the disk
    // in the WAL before any page of theirs reaches the database: a power loss in between would
    // otherwise leave the database holding pages of commits its WAL lost.
    if (this.durability === 'fsync' && this.flusher) this.flusher.syncNow()
    this.db.exec('PRAGMA wal_checkpoint(PASSIVE)')
    // Data and size (fdatasync, as SQLite's usual Linux builds sync): the database's times need not be durable.
    if (this.durability === 'fsync' && this.dbFd !== undefined) fdatasyncSync(this.dbFd)
  }

  /**
   * Call after a commit: resolves when the commit is as durable as configured, or returns undefined
   * when it already is (`os`). Refuses (the commit must be taken as not acknowledged) once the store
   * has failed.
   */
  committed(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure)
    const maintained = this.maintain()
    if (maintained) return maintained
    if (this.durability === 'fsync' && this.flusher) return this.flushed()
  }

  /**
   * The WAL's upkeep after a commit: every CHECKPOINT_EVERY commits, copy it into the database once it
   * passed CHECKPOINT_BYTES. Part of `committed()`; public so that a benchmark's raw baseline can pay
   * the same upkeep for its own commits.
   */
  maintain(): Promise<void> | undefined {
    if (++this.commits % CHECKPOINT_EVERY !== 0) return
    // The WAL is looked at by its path: a data directory moved away (not yet noticed by /health) is a
    // move, lifted once it is back, not a failed checkpoint. This commit went to the open file all the same.
    if (this.dbFd !== undefined && this.noticeMove()) return
    try {
      if (statSync(this.path + '-wal').size > CHECKPOINT_BYTES) {
        // The frames being copied must be on disk before the database pages that replace them.
        if (this.durability === 'fsync' && this.flusher) return this.flushed().then(() => this.checkpointNow())
        this.checkpointNow()
      }
    } catch (error: any) {
      return Promise.reject(this.fail('STORE_UNAVAILABLE', `a checkpoint failed (${error?.code ?? error?.message ?? error})`))
    }
  }

  private async flushed() {
    try {
      await this.flusher!.durable()
    } catch (error: any) {
      throw this.fail('STORE_UNAVAILABLE', `flushing to disk failed (${error?.code ?? error?.message ?? error})`)
    }
  }

  private checkpointNow() {
    try {
      this.checkpoint()
    } catch (error: any) {
      throw this.fail('STORE_UNAVAILABLE', `a checkpoint failed (${error?.code ?? error?.message ?? error})`)
    }
  }

  /**
   * A consistent snapshot of the whole database, written by SQLite itself (`VACUUM INTO`) to `target`
   * (which must not exist) and synced. Runs between two statements of this process, so it holds
   * exactly the commits acknowledged before it: a prefix of every log.
   */
  backup(target: string) {
    if (!this.opened) throw new TaskwardError('STORE_UNAVAILABLE', 'The database is not open.')
    this.db.run('VACUUM INTO ?', [target])
    syncFile(target)
  }

  /**
   * Remember a store failure: `health()` reports it and every later write is refused with it, for good.
   * It replaces a move (which would be lifted once the file is back: a failed fsync must not be) and
   * is never replaced itself.
   */
  fail(code: 'STORE_CORRUPT' | 'STORE_UNAVAILABLE', what: string) {
    if (this.recorded?.details?.reason === 'file-moved') this.recorded = undefined
    this.recorded ??= new TaskwardError(code,
      `The database ${this.path} failed: ${what}. The host stopped acknowledging writes; stop it, run \`npm run doctor\`, `
      + 'and restore a backup if the file is damaged (docs/operations.md, "Backup and restore").', { file: this.path })
    return this.recorded
  }

  /**
   * The file was moved away from its path (its directory renamed, say) while the host ran: writes are
   * refused meanwhile — they would go to a file nobody at that path reads. Unlike an I/O or fsync
   * failure, nothing was lost: once the same file is back at its path, `health()` lifts the refusal.
   */
  private moved(what: string) {
    this.recorded ??= new TaskwardError('STORE_UNAVAILABLE',
      `The database ${this.path} is not available: ${what}. Writes are refused until the same file is back at that path `
      + '(GET /health says when); if it was removed, stop the host and restore a backup (docs/operations.md, "Backup and restore").',
      { file: this.path, reason: 'file-moved' })
    return this.recorded
  }

  /** Whether the file open here is no longer at its path; if so, remembered as a move. */
  private noticeMove() {
    const where = this.atItsPath()
    if (where === 'same') return false
    this.moved(`the file was ${where === 'other' ? 'replaced' : 'removed or moved'} while the host ran (${basename(this.path)}); writes would go to a file nobody will read`)
    return true
  }

  /** Classify an engine error: damage and I/O failures are store failures; constraint errors are not. */
  classify(error: any): any {
    const message = String(error?.message ?? error)
    if (/malformed|not a database|corrupt/i.test(message)) return this.fail('STORE_CORRUPT', message)
    if (/disk I\/O|database or disk is full|unable to open|readonly/i.test(message)) return this.fail('STORE_UNAVAILABLE', message)
    return error
  }

  override _exec(sql: string, params: any, callback: (stmt: any) => any) {
    if (this.failure && !/^\s*(SELECT|PRAGMA)/i.test(sql)) throw this.failure
    try {
      return super._exec(sql, params, callback)
    } catch (error) {
      throw this.classify(error)
    }
  }

  /** Whether the store still works: remembered failures, and the file on disk still being this one. */
  health(): StoreHealth {
    // Reading `failure` lifts a move that has passed.
    if (!this.failure && this.dbFd !== undefined) {
      try {
        if (!this.noticeMove()) this.db.exec('SELECT count(*) FROM sqlite_master')
      } catch (error) {
        const failure = this.classify(error)
        if (!(failure instanceof TaskwardError)) this.fail('STORE_UNAVAILABLE', String((error as Error)?.message ?? error))
      }
    }
    if (this.failure) return { ok: false, code: this.failure.code as StoreHealth['code'], message: this.failure.message }
    return { ok: true }
  }

  /** Whether the file open here is still the one at `path`. */
  private atItsPath(): 'same' | 'other' | 'missing' {
    const open = fstatSync(this.dbFd!)
    let onDisk
    try {
      onDisk = statSync(this.path)
    } catch {
      return 'missing'
    }
    return onDisk.ino === open.ino && onDisk.dev === open.dev ? 'same' : 'other'
  }

  /**
   * Called before every minato write (the host's event store sets it): events staged for a step are
   * written first, so no row written here is durable before the events it may derive from.
   */
  beforeWrite?: () => void
  private inTransaction = false
  /** How a whole file is synced (a test watches the close's). */
  protected syncFile = syncFile

  private prepareWrite() {
    if (!this.inTransaction) this.beforeWrite?.()
  }

  // Every minato write is acknowledged only once durable.
  override async create(sel: any, data: any) {
    this.prepareWrite()
    const result = await super.create(sel, data)
    await this.committed()
    return result
  }

  override async upsert(sel: any, data: any[], keys: string[]) {
    this.prepareWrite()
    const result = await super.upsert(sel, data, keys)
    await this.committed()
    return result
  }

  override async set(sel: any, update: any) {
    this.prepareWrite()
    const result = await super.set(sel, update)
    await this.committed()
    return result
  }

  override async withTransaction(callback: () => Promise<void>) {
    this.prepareWrite()
    this.inTransaction = true
    try {
      await super.withTransaction(callback)
    } finally {
      this.inTransaction = false
    }
    await this.committed()
  }

  override async remove(sel: any) {
    this.prepareWrite()
    const result = await super.remove(sel)
    await this.committed()
    return result
  }
}

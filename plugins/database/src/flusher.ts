import { closeSync, fdatasync, fdatasyncSync, fsyncSync, openSync } from 'node:fs'
import { promisify } from 'node:util'

const fdatasyncAsync = promisify(fdatasync)

/** How many of the latest flushes' waits a Flusher keeps (for `/health?verbose`'s WAL flushes). */
export const RECENT_FLUSHES = 512

/** What a Flusher syncs with and times by; a test gives its own to know what it records. */
export interface FlusherParts {
  sync?: (fd: number) => Promise<void>
  /** The blocking flush of `syncNow` (a checkpoint's). */
  syncBlocking?: (fd: number) => void
  clock?: () => number
}

/**
 * Group commit for a SQLite file that the wasm engine writes with plain `pwrite` and never syncs.
 * The flush is `fdatasync`, as SQLite's usual Linux builds sync: the WAL's data and size reach stable storage,
 * its modification time need not (an fsync also commits the inode's times to the filesystem's journal:
 * at 500 paced sessions the flushes' p99 was 31 ms with fsync, 23 ms with fdatasync).
 * After each commit a writer asks for `durable()`; one flush of the WAL covers every commit made
 * before it started, so concurrent writers share a flush and a writer that committed during a running
 * flush waits for the next one.
 *
 * Why an fd of our own flushes the engine's writes: dirty pages belong to the file (the inode's page
 * cache), not to the descriptor that wrote them, so `fdatasync` on any descriptor of the same file writes
 * them all to stable storage (POSIX: "all data for the open file").
 */
export class Flusher {
  private committed = 0
  private synced = 0
  private running?: Promise<void>
  private walFd?: number
  failure?: Error
  /** Flushes done (diagnostics and benchmarks: commits per flush). */
  flushes = 0
  /** The latest RECENT_FLUSHES flushes' waits (ms), oldest overwritten first. */
  private readonly waits = new Float64Array(RECENT_FLUSHES)
  private readonly sync: (fd: number) => Promise<void>
  private readonly syncBlocking: (fd: number) => void
  private readonly clock: () => number

  constructor(private readonly walFile: string, private readonly directory: string, parts: FlusherParts = {}) {
    this.sync = parts.sync ?? fdatasyncAsync
    this.syncBlocking = parts.syncBlocking ?? fdatasyncSync
    this.clock = parts.clock ?? (() => performance.now())
  }

  /** Resolve once every commit made before this call is on stable storage. */
  async durable(): Promise<void> {
    const wanted = ++this.committed
    while (this.synced < wanted) {
      if (this.failure) throw this.failure
      this.running ??= this.flush()
      await this.running
    }
    if (this.failure) throw this.failure
  }

  private async flush() {
    const upTo = this.committed
    try {
      const walFd = this.openWal()
      // Timed as a commit waits for it: libuv's pool queue and the event loop's delay are in it with
      // the disk's own time (the first flush's directory sync is not: it happens once).
      const started = this.clock()
      await this.sync(walFd)
      this.waits[this.flushes % RECENT_FLUSHES] = this.clock() - started
      this.flushes++
      this.synced = upTo
    } catch (error: any) {
      // A failed flush may have dropped dirty pages (Linux clears the error): nothing written since the
      // last good flush can be trusted any more, so the store stops acknowledging writes.
      this.failure = error
    } finally {
      this.running = undefined
    }
  }

  /**
   * Flush the WAL now, blocking: for a checkpoint, which must not copy into the database a frame that
   * is not yet on disk in the WAL (a commit made while the last flush ran). Throws what the sync threw.
   */
  syncNow() {
    if (this.failure) throw this.failure
    try {
      this.syncBlocking(this.openWal())
    } catch (error: any) {
      // As a failed flush: nothing written since the last good one can be trusted.
      this.failure = error
      throw error
    }
  }

  /** The WAL's descriptor; opened by the first flush of this run, which makes its directory entry durable too (the file is new). */
  private openWal(): number {
    if (this.walFd === undefined) {
      this.walFd = openSync(this.walFile, 'r')
      syncDirectory(this.directory)
    }
    return this.walFd
  }

  /**
   * How long the latest flushes of the WAL took from the sync's call to its answer on the event loop
   * (ms, at most RECENT_FLUSHES, in no order): a commit that waits to be durable waits for one or two.
   */
  recentFlushMs(): number[] {
    return Array.from(this.waits.subarray(0, Math.min(this.flushes, RECENT_FLUSHES)))
  }

  close() {
    if (this.walFd !== undefined) closeSync(this.walFd)
    this.walFd = undefined
  }
}

export function syncFile(file: string) {
  const fd = openSync(file, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export function syncDirectory(directory: string) {
  try {
    syncFile(directory)
  } catch (error: any) {
    // Some filesystems refuse fsync on a directory; the file data itself is synced regardless.
    if (error?.code !== 'EINVAL' && error?.code !== 'EISDIR') throw error
  }
}

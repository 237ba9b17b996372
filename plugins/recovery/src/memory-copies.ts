import { accessSync, constants, statfsSync } from 'node:fs'
import type { CandidateParts } from './candidate'
import { isWithin } from './sandbox'

/** Linux's shared-memory directory: a tmpfs on Debian, systemd machines and in containers (Docker: 64 MiB). */
export const MEMORY_DIRECTORY = '/dev/shm'
/** statfs's f_type of a tmpfs. */
const TMPFS_MAGIC = 0x01021994
/** What one entry costs a tmpfs beyond its bytes, at most: a file's last page, a directory's page. */
const ENTRY_BYTES = 4096

/**
 * The memory a copy of the candidate takes on a tmpfs, at most: the bytes of what is copied plus a page
 * per entry. In bubblewrap the dependency directories are mounted, not copied.
 */
export function copyEstimate(parts: CandidateParts, dependenciesMounted: boolean): number {
  const size = ({ entries, bytes }: { entries: number, bytes: number }) => bytes + entries * ENTRY_BYTES
  return size(parts.own) + (dependenciesMounted ? 0 : size(parts.dependencies))
}

/** Whether `directory` is a tmpfs this process may create directories in. */
export function isMemoryDirectory(directory: string): boolean {
  try {
    if (statfsSync(directory).type !== TMPFS_MAGIC) return false
    accessSync(directory, constants.W_OK | constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Free bytes of the file system at `directory` (0 when it cannot be asked). */
function freeBytes(directory: string): number {
  try {
    const { bavail, bsize } = statfsSync(directory)
    return Number(bavail) * Number(bsize)
  } catch {
    return 0
  }
}

/** A copy's place in memory while it lasts: its base directory, and its release (once; later calls do nothing). */
export interface MemorySlot {
  base: string
  release(): void
}

/**
 * Where the checks' copies go: in memory (a tmpfs) while the copies there at once take at most
 * `budgetBytes` by their estimate, else the temp directory. On a host of hundreds of sessions the copies
 * made and removed on the data directory's disk kept its journal busy, and every store flush (the WAL's
 * fsync) and file tool call waited behind them (500 paced sessions: host-added p99 635 ms with the copies
 * on disk, 283 ms with them in memory, the same run otherwise). A budget of 0 keeps every copy on disk.
 * What a check writes into its copy (a build's output) is in memory too and is not in the estimate. A
 * copy that could not be removed keeps its room (its release is not called): it is still in memory.
 */
export class MemoryCopies {
  private used = 0
  private usable?: boolean

  constructor(readonly budgetBytes: number, readonly directory = MEMORY_DIRECTORY,
    private readonly probe: (directory: string) => boolean = isMemoryDirectory, private readonly free = freeBytes) {}

  /** Bytes reserved by copies in memory now. */
  get reserved() {
    return this.used
  }

  /**
   * A place in memory for a copy of `estimate` bytes of `source` (the workspace's real path), or
   * undefined: the temp directory. Refused past the budget, where the directory is not a writable tmpfs
   * (looked at once), without room on it, or when the workspace and the directory contain one another.
   */
  reserve(estimate: number, source: string): MemorySlot | undefined {
    if (this.budgetBytes <= 0 || !(estimate >= 0) || this.used + estimate > this.budgetBytes) return undefined
    if (!(this.usable ??= this.probe(this.directory))) return undefined
    if (isWithin(source, this.directory) || isWithin(this.directory, source)) return undefined
    // Its own size too: a container's /dev/shm is small, and other programs use it. The copies reserved
    // here may not be made yet (their room is not taken yet), so they count against what is free.
    if (this.free(this.directory) - this.used < estimate * 2) return undefined
    this.used += estimate
    let released = false
    return {
      base: this.directory,
      release: () => {
        if (released) return
        released = true
        this.used -= estimate
      },
    }
  }
}

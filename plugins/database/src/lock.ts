import { closeSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { TaskwardError } from '@taskward/protocol'

/** What a lock file says about the host that holds it. */
export interface LockHolder {
  pid: number
  hostname: string
  /** The kernel's start time of the process (`/proc/<pid>/stat` field 22), to tell a reused pid apart. */
  processStart?: string
  /** When the host took the lock (ISO time). */
  startedAt: string
  /** Random per acquisition: names this very lock when a stale one is taken over. */
  nonce: string
}

/** Locks this process holds, by lock file: a second host in the same process is refused too. */
const heldHere = new Set<string>()

function processStartOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (comm) may hold spaces and parentheses: count fields after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

export function readHolder(file: string): LockHolder | undefined | 'unreadable' {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error: any) {
    if (error?.code === 'ENOENT') return undefined
    throw error
  }
  try {
    const holder = JSON.parse(text)
    if (Number.isSafeInteger(holder?.pid) && typeof holder.nonce === 'string') return holder
  } catch {}
  return 'unreadable'
}

/**
 * Whether the holder still runs. Another machine's holder cannot be checked from here: it counts as
 * alive (the message says how to clear it by hand). A pid that runs but started at another time was
 * reused by an unrelated process after the holder died.
 */
export function holderAlive(file: string, holder: LockHolder): boolean {
  if (holder.hostname !== hostname()) return true
  if (holder.pid === process.pid) return heldHere.has(file) && holder.processStart === processStartOf(process.pid)
  try {
    process.kill(holder.pid, 0)
  } catch (error: any) {
    if (error?.code === 'ESRCH') return false
  }
  const start = processStartOf(holder.pid)
  return !(start && holder.processStart && start !== holder.processStart)
}

export function describeHolder(holder: LockHolder) {
  const where = holder.hostname === hostname() ? '' : ` on machine ${holder.hostname}`
  return `pid ${holder.pid}${where}, started ${holder.startedAt}`
}

function writeLockFile(path: string, holder: LockHolder) {
  const fd = openSync(path, 'wx', 0o644)
  try {
    writeSync(fd, JSON.stringify(holder) + '\n')
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * The exclusive lock of one data directory: a lock file created atomically (written in full to a
 * private temp name, then hard-linked into place, which fails if the file exists), so a reader never
 * sees half a lock. A lock whose holder is gone (no such pid, or the pid now belongs to a process that
 * started later) is taken over without manual steps: it is renamed aside and checked to be the very
 * lock that was judged stale before it is removed.
 */
export class DataDirLock {
  private holder?: LockHolder

  constructor(readonly file: string, private readonly what: string) {}

  acquire(): LockHolder {
    const holder: LockHolder = {
      pid: process.pid,
      hostname: hostname(),
      processStart: processStartOf(process.pid),
      startedAt: new Date().toISOString(),
      nonce: randomBytes(12).toString('hex'),
    }
    const temp = `${this.file}.${holder.nonce}.tmp`
    try {
      try {
        writeLockFile(temp, holder)
      } catch (error) {
        throw this.unusable(error)
      }
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          linkSync(temp, this.file)
          this.holder = holder
          heldHere.add(this.file)
          return holder
        } catch (error: any) {
          if (error?.code !== 'EEXIST') throw this.unusable(error)
        }
        let current: ReturnType<typeof readHolder>
        try {
          current = readHolder(this.file)
        } catch (error) {
          throw this.unusable(error)
        }
        if (current === undefined) continue
        if (current !== 'unreadable' && holderAlive(this.file, current)) throw this.locked(current)
        try {
          this.takeOver(current)
        } catch (error) {
          throw this.unusable(error)
        }
      }
      throw new TaskwardError('STORE_LOCKED', `Could not take the lock ${this.file}: other hosts keep starting on ${this.what} at the same time. Start one host only.`, { lockFile: this.file })
    } finally {
      try { unlinkSync(temp) } catch {}
    }
  }

  /** Remove a stale lock, but only the one judged stale: a fresh lock that replaced it meanwhile is put back. */
  private takeOver(judged: LockHolder | 'unreadable') {
    const aside = `${this.file}.${randomBytes(6).toString('hex')}.stale`
    try {
      renameSync(this.file, aside)
    } catch (error: any) {
      if (error?.code === 'ENOENT') return
      throw error
    }
    const moved = readHolder(aside)
    const same = judged === 'unreadable' ? moved === 'unreadable' : moved !== 'unreadable' && moved?.nonce === judged.nonce
    if (!same) {
      try { linkSync(aside, this.file) } catch {}
    }
    try { unlinkSync(aside) } catch {}
  }

  /** The directory cannot hold a lock file (missing, not a directory, not writable, the lock a directory…). */
  private unusable(error: any) {
    const message = String(error?.message ?? error)
    // Node's fs messages start with their code already ("ENOENT: no such file or directory, open …").
    const reason = error?.code && !message.startsWith(error.code) ? `${error.code}: ${message}` : message
    return new TaskwardError('STORE_UNAVAILABLE',
      `${this.what} cannot hold the lock file ${this.file} (${reason}). It must be a directory this user can read and write, `
      + 'and the lock file, when there, a file: fix the permissions or choose another --data directory; `npm run doctor` checks it.',
      { lockFile: this.file, ...error?.code ? { cause: error.code } : {} })
  }

  private locked(holder: LockHolder) {
    const remote = holder.hostname !== hostname()
    return new TaskwardError('STORE_LOCKED',
      `${this.what} is in use by another Taskward host (${describeHolder(holder)}). One host per data directory: `
      + 'stop that host, or start this one with another --data directory. To run several hosts on one store, use '
      + 'MySQL/MariaDB (docs/operations.md, "MySQL / MariaDB").'
      + (remote ? ` The holder runs on another machine, so this host cannot tell whether it is gone: if it is, delete ${this.file}.` : ''),
      { lockFile: this.file, holder: { pid: holder.pid, hostname: holder.hostname, startedAt: holder.startedAt } })
  }

  /** Release the lock if this object still holds it (never someone else's). */
  release() {
    const mine = this.holder
    if (!mine) return
    this.holder = undefined
    heldHere.delete(this.file)
    const current = readHolder(this.file)
    if (current && current !== 'unreadable' && current.nonce === mine.nonce) {
      try { unlinkSync(this.file) } catch {}
    }
  }

  get held() {
    return !!this.holder
  }
}

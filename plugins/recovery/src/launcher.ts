import { spawn, type ChildProcess } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { TaskwardError } from '@taskward/protocol'
import { LAUNCHER_SOURCE } from './launcher-program'

/**
 * What one check process did, as the launcher saw it: how it ended (`exit`, absent when it never
 * started), whether the timeout killed its group, and the errno code of a spawn that failed.
 */
export interface LaunchOutcome {
  exit?: { code: number | null, signal: NodeJS.Signals | null }
  timedOut?: boolean
  spawnError?: string
}

export interface LaunchRequest {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  timeoutMs: number
  /** After the process exited (or was killed), how long its output may still arrive. */
  graceMs: number
  /** What the host keeps of the output (BoundedOutput's limit): the launcher passes on no more than its head and tail. */
  outputLimitBytes: number
  /** The area (its root) whose mounted dependency directories the process gets as descriptors 3, 4… (bwrap's --ro-bind-fd). */
  area?: string
}

/** Where a check's output goes: its chunks in order, and a count of bytes skipped between two of them. */
export interface OutputSink {
  push(chunk: Buffer): void
  skip(bytes: number): void
}

interface Pending {
  resolve: (outcome: any) => void
  reject: (error: unknown) => void
  onOutput?: OutputSink
  /** The check process's pid (its group's id), once the launcher started it. */
  pid?: number
  /** The area a 'prepare' made, until it is done: the host removes it if the launcher dies first. */
  made?: string
  /** Its owner gave it up (`launch`'s signal): killed, and refused whatever the launcher reports. */
  cancelled?: boolean
  /** Stop listening to the owner's signal. */
  release?: () => void
}

/**
 * The process that starts the check processes and looks their programs up (see LAUNCHER_SOURCE):
 * one per host process, started on first use, holding the host open only while it has work. If it
 * dies, what it was running is refused as a runner fault (a check never passes because its runner
 * broke), the groups it had started are killed from here, and the next request starts a new one.
 */
class Launcher {
  private readonly child: ChildProcess
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  /** The runs each owner's signal cancels, and its listener while it has any (see `request`). */
  private readonly owners = new WeakMap<AbortSignal, { runs: Set<number>, listener: () => void }>()
  dead = false

  constructor() {
    // No environment: the launcher needs none (each check gets its own scrubbed one), and the host's
    // NODE_OPTIONS (e.g. a loader) or secrets have no business in it. Advanced serialization carries
    // output chunks as bytes. Detached (a session of its own): a Ctrl-C at the host's terminal is the
    // host's to handle — DSH and the cordis CLI shut down gracefully — and killed with the host's
    // process group the launcher would refuse the running checks as broken; it ends with its IPC channel.
    this.child = spawn(process.execPath, ['-e', LAUNCHER_SOURCE], {
      env: {}, detached: true, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'advanced',
    })
    this.idle()
    this.child.on('message', (message: { id: number, kind: string, outcome?: unknown, chunk?: Uint8Array, message?: string, pid?: number, bytes?: number, root?: string }) => {
      const pending = this.pending.get(message.id)
      if (!pending) return
      if (message.kind === 'made') {
        pending.made = message.root
        return
      }
      if (message.kind === 'started') {
        pending.pid = message.pid
        return
      }
      if (message.kind === 'skipped') {
        pending.onOutput?.skip(message.bytes!)
        return
      }
      if (message.kind === 'output') {
        pending.onOutput?.push(Buffer.from(message.chunk!.buffer, message.chunk!.byteOffset, message.chunk!.byteLength))
        return
      }
      this.settle(message.id)
      if (pending.cancelled) pending.reject(cancelledRun())
      else if (message.kind === 'fault') pending.reject(this.fault(message.message!))
      // The request's own failure (a copy that could not be made), not the launcher's.
      else if (message.kind === 'failed') pending.reject(new Error(message.message))
      else pending.resolve(message.outcome)
    })
    this.child.on('error', (error) => this.died(error.message))
    this.child.on('exit', (code, signal) => this.died(`the launcher process exited (${signal ?? code})`))
  }

  private died(why: string) {
    this.dead = true
    for (const [id, pending] of this.pending) {
      // Its timeout died with the launcher: a check left running would run for ever, unbounded.
      if (pending.pid !== undefined) killGroup(pending.pid)
      this.settle(id)
      const refusal = pending.cancelled ? cancelledRun() : this.fault(why)
      // A copy it was making would be left behind, the host never told where: removed, then refused.
      if (pending.made === undefined) pending.reject(refusal)
      else void rm(pending.made, { recursive: true, force: true }).catch(() => {}).then(() => pending.reject(refusal))
    }
  }

  private send(message: unknown) {
    try {
      this.child.send(message as any)
    } catch (error) {
      this.died((error as Error).message)
    }
  }

  private fault(why: string) {
    return new TaskwardError('INTERNAL', `The recovery check launcher failed: ${why}. The check did not run; try again, and report it with the host log if it persists.`)
  }

  /** An idle launcher does not keep the host process alive; a busy one does. */
  private idle() {
    this.child.unref()
    ;(this.child.channel as { unref?(): void } | undefined)?.unref?.()
  }

  private busy() {
    this.child.ref()
    ;(this.child.channel as { ref?(): void } | undefined)?.ref?.()
  }

  private settle(id: number) {
    this.pending.get(id)?.release?.()
    this.pending.delete(id)
    if (!this.pending.size && !this.dead) this.idle()
  }

  request<T>(kind: 'which' | 'executable' | 'run' | 'prepare' | 'remove', request: unknown, onOutput?: OutputSink, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(cancelledRun())
    if (this.dead) return Promise.reject(this.fault('the launcher process is gone'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      if (!this.pending.size) this.busy()
      const pending: Pending = { resolve, reject, onOutput }
      this.pending.set(id, pending)
      this.send({ id, kind, request })
      if (signal && this.pending.has(id)) {
        // One listener per owner, not per run: a plugin's signal serves all its concurrent checks
        // (a listener each made Node warn of a leak past 10 of them). Removed with the owner's last run:
        // the signal lives as long as the plugin, and outlives this launcher when it dies and is replaced.
        let owner = this.owners.get(signal)
        if (!owner) {
          const runs = new Set<number>()
          owner = { runs, listener: () => { for (const run of [...runs]) this.cancel(run) } }
          this.owners.set(signal, owner)
          signal.addEventListener('abort', owner.listener, { once: true })
        }
        const owned = owner
        owned.runs.add(id)
        pending.release = () => {
          owned.runs.delete(id)
          if (owned.runs.size || this.owners.get(signal) !== owned) return
          signal.removeEventListener('abort', owned.listener)
          this.owners.delete(signal)
        }
      }
    })
  }

  /**
   * Kill a run its owner gave up: its group at once from here when its pid is known (the host may be
   * exiting), and by the launcher in any case (it may not have reported the pid yet). It settles, refused,
   * when the launcher reports it ended: only then is its copy free to remove.
   */
  private cancel(id: number) {
    const pending = this.pending.get(id)
    if (!pending || pending.cancelled) return
    pending.cancelled = true
    if (pending.pid !== undefined) killGroup(pending.pid)
    this.send({ id, kind: 'cancel' })
  }

  /** Kill every running check's process group, synchronously (the host process is exiting). */
  killAll() {
    for (const pending of this.pending.values()) if (pending.pid !== undefined) killGroup(pending.pid)
  }

  /** End the launcher; every check it was running is killed with its group and refused as a runner fault. */
  async stop() {
    // One whose spawn failed never started: it reports an 'error' (refusing what it holds), no 'exit'.
    if (this.dead || this.child.pid === undefined) return
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()))
    this.child.kill('SIGKILL')
    await exited
  }

  /** The launcher's pid (tests: a check's parent is this process, never the host). */
  get pid() {
    return this.child.pid
  }
}

/** A run killed because its owner was disposed: it proves nothing, so no verdict is recorded from it. */
export function cancelledRun() {
  return new TaskwardError('ABORTED', 'The recovery check was stopped because the recovery plugin was disposed (unloaded, or its host stopped) while it ran; '
    + 'it proves nothing either way. Once the plugin is loaded again, run the checks again.', { reason: 'disposed' })
}

function killGroup(pid: number) {
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {}
}

let shared: Launcher | undefined
let exitHooked = false
const launcher = () => {
  // A check runs in its own process group, detached: a host that exits would leave it running with
  // nothing left to time it out (the launcher also kills them when the host is gone; this is at once).
  // Process-wide (like the launcher itself), not tied to one plugin.
  if (!exitHooked) {
    exitHooked = true
    process.once('exit', () => shared?.killAll())
  }
  if (!shared || shared.dead) shared = new Launcher()
  return shared
}

/** The absolute path of each program on `path` (undefined where none is executable), looked up off the event loop. */
export async function whichAll(programs: string[], path: string): Promise<(string | undefined)[]> {
  const found = await launcher().request<(string | null)[]>('which', { programs, path })
  return found.map((one) => one ?? undefined)
}

/** Whether `path` is executable by this process (X_OK), asked off the event loop. */
export function isExecutable(path: string): Promise<boolean> {
  return launcher().request<boolean>('executable', { path })
}

/**
 * A new directory under `base` holding `home` (empty) and `work` (a copy of the directory `cwd` names: symlinks copied as
 * links, the root `.git` left out unless `keepGit`, and the directories `exclude` names by their real paths), made by the launcher; resolves with the directory
 * and its real path. `dependencies` names the dependency directories; with `mount` they are not copied
 * but opened and kept for the area's checks to mount read-only (`mounts`: their paths in the copy, in
 * descriptor order; empty where the launcher cannot reach directories by descriptor). A symbolic link
 * outside them whose target leaves the workspace fails the copy (a check would judge files the
 * candidate does not hold). Rejects with the file system's error when the copy cannot be made.
 */
export function prepareInLauncher(request: {
  cwd: string, base: string, keepGit: boolean, exclude?: string[], dependencies?: { names: string[], paths: string[] }, mount?: boolean,
}): Promise<{ root: string, real: string, mounts: string[] }> {
  return launcher().request('prepare', request)
}

/** Remove `path` and everything under it, by the launcher (as `rm -rf`). */
export function removeInLauncher(path: string): Promise<void> {
  return launcher().request('remove', { path })
}

/**
 * Start one check process off the event loop and resolve when it ended (see LAUNCHER_SOURCE). When
 * `signal` aborts (its owner, one recovery plugin, is disposed) the process group is killed and the run
 * rejects with `ABORTED` once it has ended; other owners' runs in this launcher go on.
 */
export function launch(request: LaunchRequest, onOutput: OutputSink, signal?: AbortSignal): Promise<LaunchOutcome> {
  return launcher().request<LaunchOutcome>('run', request, onOutput, signal)
}

/**
 * End the launcher process and every check it is running (each killed with its process group, refused
 * as a runner fault); the next request starts a new one.
 */
export async function stopLauncher() {
  const current = shared
  shared = undefined
  await current?.stop()
}

/** The pid of the running launcher process, starting it if needed (tests). */
export async function launcherPid(): Promise<number | undefined> {
  const current = launcher()
  await current.request('executable', { path: '/' })
  return current.pid
}

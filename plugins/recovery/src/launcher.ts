import { spawn, type ChildProcess } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { TaskwardError } from '@taskward/protocol'

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
}

// The launcher's whole program, run by a small node process of its own (`node -e`, no module
// resolution, so it survives any bundling of this plugin). Why a process and not a thread: spawn()
// forks the calling process, and a fork copies the page tables of the whole address space — from a
// host of ~370 MB that is ~20–30 ms and ~10–15 ms of kernel CPU per check (measured, Node 20 and 24),
// wherever in the host it is called, while the host's own page faults wait. From this ~50 MB process it
// is ~2 ms, and the host forks once, for the launcher. Each check: argv spawned directly (never a
// shell), detached as its own process group (killed as a whole on timeout and after the leader exits),
// output sent back in chunks; it ends at the latest `graceMs` after the process exited or was
// killed, whoever still holds its pipes. Program lookups read the file system as spawn will (X_OK on
// each PATH entry, in order). The host keeps only the head and the tail of the output (BoundedOutput,
// `outputLimitBytes`), so only those cross, without slowing the check: the first `outputLimitBytes`
// are posted as they come; the rest waits here, only its newest `outputLimitBytes` kept and the older
// bytes counted, and is posted — the count, then the tail — when the run ends. So a check that floods
// its output costs the host's event loop a bounded number of messages however much it writes (every
// chunk it took was a message, read and decoded on the event loop), a busy host has nothing piling up
// for it, and the tail where test runners summarize still arrives. Each run's pid is posted as it
// starts, so the host can kill its group if this process dies; and when the host goes away — even
// SIGKILLed — the IPC channel closes and this process kills every check it runs, then exits.
const LAUNCHER_SOURCE = `
const groups = new Set()
const post = (message) => {
  try { process.send(message) } catch {}
}
const { spawn } = require('node:child_process')
const { accessSync, constants } = require('node:fs')
const { cp, mkdir, mkdtemp, realpath, rm } = require('node:fs/promises')
const { delimiter, join, relative } = require('node:path')

const killGroup = (pid) => {
  if (pid === undefined) return
  try { process.kill(-pid, 'SIGKILL') } catch {}
}
const executable = (path) => {
  try { accessSync(path, constants.X_OK); return true } catch { return false }
}
const which = (program, path) => {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, program)
    if (executable(candidate)) return candidate
  }
  return null
}

function run(id, { file, args, cwd, env, timeoutMs, graceMs, outputLimitBytes }) {
  let settled = false
  let timedOut = false
  let exit
  let grace
  let spawnError
  const finish = (outcome) => {
    if (settled) return
    settled = true
    clearTimeout(timer)
    clearTimeout(grace)
    // The tail goes before the outcome: it is where test runners summarize.
    if (skipped) post({ id, kind: 'skipped', bytes: skipped })
    for (const chunk of tail) post({ id, kind: 'output', chunk })
    post({ id, kind: 'done', outcome })
  }
  const ended = () => finish({ exit, ...timedOut ? { timedOut } : {} })
  const startGrace = () => {
    grace ??= setTimeout(() => {
      child.stdout?.destroy()
      child.stderr?.destroy()
      ended()
    }, graceMs)
  }
  const child = spawn(file, args, { cwd, env, shell: false, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  if (child.pid !== undefined) {
    groups.add(child.pid)
    post({ id, kind: 'started', pid: child.pid })
  }
  // The head, posted as it comes; then the newest outputLimitBytes (at least) of the rest, and what lay
  // between as a count (exact: the host would have dropped those bytes, its tail is shorter than this).
  let headLeft = outputLimitBytes
  const tail = []
  let tailBytes = 0
  let skipped = 0
  const output = (chunk) => {
    if (settled) return
    if (headLeft > 0) {
      headLeft -= chunk.length
      return post({ id, kind: 'output', chunk })
    }
    tail.push(chunk)
    tailBytes += chunk.length
    while (tailBytes - tail[0].length >= outputLimitBytes) {
      const first = tail.shift()
      tailBytes -= first.length
      skipped += first.length
    }
  }
  child.stdout.on('data', output)
  child.stderr.on('data', output)
  const timer = setTimeout(() => {
    timedOut = true
    killGroup(child.pid)
    startGrace()
  }, timeoutMs)
  child.on('error', (error) => {
    spawnError = error.code ?? 'error'
    // A process that never started emits no useful close; one that did is settled by close.
    if (child.pid === undefined) finish({ spawnError })
  })
  child.on('exit', (code, signal) => {
    exit = { code, signal }
    // Whatever the leader left behind in its group goes too.
    killGroup(child.pid)
    startGrace()
  })
  child.on('close', (code, signal) => {
    groups.delete(child.pid)
    if (spawnError) return finish({ spawnError })
    exit ??= { code, signal }
    killGroup(child.pid)
    ended()
  })
}

// A check's area: a new directory under base with an empty home and a copy of cwd (symlinks as links,
// the root .git left out unless keepGit). Here, where the file system's round trips wait for nothing
// else: on a busy host each of the copy's dozens would wait for its event loop.
const prepare = async (id, { cwd, base, keepGit }) => {
  // The directory cwd names: cp copies a path that is a symlink as the link, and a check would run
  // in the workspace itself.
  const source = await realpath(cwd)
  const root = await mkdtemp(join(base, 'taskward-check-'))
  // The host removes it should this process die before the copy is done (it cannot, then).
  post({ id, kind: 'made', root })
  try {
    await mkdir(join(root, 'home'))
    await cp(source, join(root, 'work'), { recursive: true, verbatimSymlinks: true, filter: (path) => keepGit || relative(source, path) !== '.git' })
    return { root, real: await realpath(root) }
  } catch (error) {
    await rm(root, { recursive: true, force: true })
    throw error
  }
}
const settleWith = (id, work) => work.then(
  (outcome) => post({ id, kind: 'done', outcome }),
  (error) => post({ id, kind: 'failed', message: String(error && error.message || error) }),
)

process.on('message', ({ id, kind, request }) => {
  try {
    if (kind === 'prepare') {
      settleWith(id, prepare(id, request))
    } else if (kind === 'remove') {
      settleWith(id, rm(request.path, { recursive: true, force: true }).then(() => true))
    } else if (kind === 'which') {
      post({ id, kind: 'done', outcome: request.programs.map((program) => which(program, request.path)) })
    } else if (kind === 'executable') {
      post({ id, kind: 'done', outcome: executable(request.path) })
    } else {
      run(id, request)
    }
  } catch (error) {
    post({ id, kind: 'fault', message: String(error && error.message || error) })
  }
})
// The host is gone (exited, crashed or SIGKILLed): nothing is left to time the checks out. A write to
// it can fail (EPIPE, emitted on process) before the channel's end is read: the same news, not a crash.
const hostGone = () => {
  for (const pid of groups) killGroup(pid)
  process.exit(0)
}
process.on('disconnect', hostGone)
process.on('error', hostGone)
`

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
      if (message.kind === 'fault') pending.reject(this.fault(message.message!))
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
      // A copy it was making would be left behind, the host never told where: removed, then refused.
      if (pending.made === undefined) pending.reject(this.fault(why))
      else void rm(pending.made, { recursive: true, force: true }).catch(() => {}).then(() => pending.reject(this.fault(why)))
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
    this.pending.delete(id)
    if (!this.pending.size && !this.dead) this.idle()
  }

  request<T>(kind: 'which' | 'executable' | 'run' | 'prepare' | 'remove', request: unknown, onOutput?: OutputSink): Promise<T> {
    if (this.dead) return Promise.reject(this.fault('the launcher process is gone'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      if (!this.pending.size) this.busy()
      this.pending.set(id, { resolve, reject, onOutput })
      this.send({ id, kind, request })
    })
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
 * links, the root `.git` left out unless `keepGit`), made by the launcher; resolves with the directory
 * and its real path. Rejects with the file system's error when the copy cannot be made.
 */
export function prepareInLauncher(request: { cwd: string, base: string, keepGit: boolean }): Promise<{ root: string, real: string }> {
  return launcher().request('prepare', request)
}

/** Remove `path` and everything under it, by the launcher (as `rm -rf`). */
export function removeInLauncher(path: string): Promise<void> {
  return launcher().request('remove', { path })
}

/** Start one check process off the event loop and resolve when it ended (see LAUNCHER_SOURCE). */
export function launch(request: LaunchRequest, onOutput: OutputSink): Promise<LaunchOutcome> {
  return launcher().request<LaunchOutcome>('run', request, onOutput)
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

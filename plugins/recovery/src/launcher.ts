import { Worker } from 'node:worker_threads'
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
  /** What the host keeps of the output (BoundedOutput's limit): the launcher holds back no more than that. */
  outputLimitBytes: number
}

// The launcher thread's whole program, evaluated as a script (no module resolution, so it survives any
// bundling of this plugin). Node's spawn() forks the whole host and blocks its thread until the child
// has exec'd: with a few hundred MB of heap and busy cores that is milliseconds, so it happens here and
// never on the event loop. Each check: argv spawned directly (never a shell), detached as its own
// process group (killed as a whole on timeout and after the leader exits), output streamed back in
// chunks; it ends at the latest `graceMs` after the process exited or was killed, whoever still holds
// its pipes. Program lookups read the file system as spawn will (X_OK on each PATH entry, in order).
// Output is flow-controlled without slowing the check: at most OUTPUT_WINDOW + the output limit bytes
// are posted and not yet acknowledged by the host thread (which acks each chunk once bounded); past
// that, chunks wait here, and of those only the newest `outputLimitBytes` are kept — the older ones
// are posted as a count of skipped bytes (the head was posted long before, and the tail the host keeps
// is shorter than what waits). So a check that floods its output while the event loop is busy never
// queues more than that in the host, and its tail still arrives before the run is done. Each run's
// pid is posted as it starts, so the host can kill its group if this thread dies.
const OUTPUT_WINDOW = 256 * 1024
const LAUNCHER_SOURCE = `
const OUTPUT_WINDOW = ${OUTPUT_WINDOW}
const runs = new Map()
const { parentPort } = require('node:worker_threads')
const { spawn } = require('node:child_process')
const { accessSync, constants } = require('node:fs')
const { delimiter, join } = require('node:path')

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
    runs.delete(id)
    // What still waits goes first (bounded): the tail is where test runners summarize.
    while (waiting.length) post(waiting.shift())
    parentPort.postMessage({ id, kind: 'done', outcome })
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
  if (child.pid !== undefined) parentPort.postMessage({ id, kind: 'started', pid: child.pid })
  const window = OUTPUT_WINDOW + outputLimitBytes
  let unacknowledged = 0
  const waiting = []
  let waitingBytes = 0
  const post = (chunk) => {
    unacknowledged += chunk.length
    parentPort.postMessage({ id, kind: 'output', chunk })
  }
  const output = (chunk) => {
    if (settled) return
    if (!waiting.length && unacknowledged + chunk.length <= window) return post(chunk)
    waiting.push(chunk)
    waitingBytes += chunk.length
    let skipped = 0
    while (waitingBytes - waiting[0].length >= outputLimitBytes) {
      const first = waiting.shift()
      waitingBytes -= first.length
      skipped += first.length
    }
    if (skipped) parentPort.postMessage({ id, kind: 'skipped', bytes: skipped })
  }
  runs.set(id, {
    ack(bytes) {
      unacknowledged -= bytes
      while (waiting.length && unacknowledged + waiting[0].length <= window) {
        const next = waiting.shift()
        waitingBytes -= next.length
        post(next)
      }
    },
  })
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
    if (spawnError) return finish({ spawnError })
    exit ??= { code, signal }
    killGroup(child.pid)
    ended()
  })
}

parentPort.on('message', ({ id, kind, request, bytes }) => {
  try {
    if (kind === 'ack') {
      runs.get(id)?.ack(bytes)
    } else if (kind === 'which') {
      parentPort.postMessage({ id, kind: 'done', outcome: request.programs.map((program) => which(program, request.path)) })
    } else if (kind === 'executable') {
      parentPort.postMessage({ id, kind: 'done', outcome: executable(request.path) })
    } else {
      run(id, request)
    }
  } catch (error) {
    parentPort.postMessage({ id, kind: 'fault', message: String(error && error.message || error) })
  }
})
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
}

/**
 * The thread that starts the check processes and looks their programs up (see LAUNCHER_SOURCE):
 * one per host process, started on first use, holding the process open only while it has work. If
 * the thread dies, what it was running is refused as a runner fault (a check never passes because its
 * runner broke) and the next request starts a new one.
 */
class Launcher {
  private readonly worker: Worker
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  dead = false

  constructor() {
    this.worker = new Worker(LAUNCHER_SOURCE, { eval: true, execArgv: [], stdout: false, stderr: false })
    this.worker.unref()
    this.worker.on('message', (message: { id: number, kind: string, outcome?: unknown, chunk?: Uint8Array, message?: string, pid?: number, bytes?: number }) => {
      const pending = this.pending.get(message.id)
      if (!pending) return
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
        this.worker.postMessage({ id: message.id, kind: 'ack', bytes: message.chunk!.byteLength })
        return
      }
      this.settle(message.id)
      if (message.kind === 'fault') pending.reject(this.fault(message.message!))
      else pending.resolve(message.outcome)
    })
    const died = (why: string) => {
      this.dead = true
      for (const [id, pending] of this.pending) {
        // Its timeout died with the thread: a check left running would run for ever, unbounded.
        if (pending.pid !== undefined) killGroup(pending.pid)
        this.settle(id)
        pending.reject(this.fault(why))
      }
    }
    this.worker.on('error', (error) => died(error.message))
    this.worker.on('exit', (code) => died(`the launcher thread exited (${code})`))
  }

  private fault(why: string) {
    return new TaskwardError('INTERNAL', `The recovery check launcher failed: ${why}. The check did not run; try again, and report it with the host log if it persists.`)
  }

  private settle(id: number) {
    this.pending.delete(id)
    if (!this.pending.size) this.worker.unref()
  }

  request<T>(kind: 'which' | 'executable' | 'run', request: unknown, onOutput?: OutputSink): Promise<T> {
    if (this.dead) return Promise.reject(this.fault('the launcher thread is gone'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      if (!this.pending.size) this.worker.ref()
      this.pending.set(id, { resolve, reject, onOutput })
      this.worker.postMessage({ id, kind, request })
    })
  }

  /** Kill every running check's process group, synchronously (the host process is exiting). */
  killAll() {
    for (const pending of this.pending.values()) if (pending.pid !== undefined) killGroup(pending.pid)
  }

  /** End the thread; every check it was running is killed with its group and refused as a runner fault. */
  stop() {
    return this.worker.terminate()
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
  // nothing left to time it out. Process-wide (like the thread itself), not tied to one plugin.
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

/** Start one check process off the event loop and resolve when it ended (see LAUNCHER_SOURCE). */
export function launch(request: LaunchRequest, onOutput: OutputSink): Promise<LaunchOutcome> {
  return launcher().request<LaunchOutcome>('run', request, onOutput)
}

/**
 * End the launcher thread and every check it is running (each killed with its process group, refused
 * as a runner fault); the next request starts a new thread.
 */
export async function stopLauncher() {
  const current = shared
  shared = undefined
  await current?.stop()
}

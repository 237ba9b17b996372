import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import type { CheckRun, CheckSpec } from '@taskward/protocol'
import { BoundedOutput } from './output'
import { bwrapArgv, scrubbedEnv, type CheckArea } from './sandbox'

export interface RunOptions {
  sandbox: 'copy' | 'bwrap'
  outputLimitBytes: number
}

/** Kill the check's whole process group (it was started detached, as its own group leader). */
function killGroup(pid: number | undefined) {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {}
}

/**
 * Run one check in `area`: argv spawned directly (never through a shell), cwd = the copy, the scrubbed
 * environment, its own process group (killed as a whole on timeout), bounded output. Resolves to the
 * raw run for `checkResultOf`; a program that cannot be started is `not-runnable`.
 */
export async function runCheck(spec: CheckSpec, area: CheckArea, options: RunOptions): Promise<CheckRun> {
  const argv = options.sandbox === 'bwrap' ? await bwrapArgv(area, spec.argv) : spec.argv
  const output = new BoundedOutput(options.outputLimitBytes)
  const started = performance.now()
  return new Promise<CheckRun>((resolve) => {
    let timedOut = false
    let settled = false
    let spawnError: NodeJS.ErrnoException | undefined
    const finish = (run: CheckRun) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(run)
    }
    const notStarted = (error: NodeJS.ErrnoException) => {
      const notRunnable = ['ENOENT', 'EACCES', 'ENOTDIR', 'ENOEXEC'].includes(error.code ?? '')
      finish({ runnerError: notRunnable ? 'not-runnable' : 'runner-fault', durationMs: performance.now() - started, output: `${error.code ?? 'error'}: cannot start ${spec.argv[0]}` })
    }
    const child = spawn(argv[0], argv.slice(1), {
      cwd: area.work,
      env: scrubbedEnv(area.home),
      shell: false,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk))
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child.pid)
    }, spec.timeoutMs)
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = error
      // A process that never started emits no useful close; one that did is settled by close.
      if (child.pid === undefined) notStarted(error)
    })
    child.on('close', (code, signal) => {
      if (spawnError) return notStarted(spawnError)
      // Whatever the leader left behind in its group goes too.
      killGroup(child.pid)
      finish({ exitCode: code, signal, ...timedOut ? { timedOut } : {}, durationMs: performance.now() - started, output: output.text() })
    })
  })
}

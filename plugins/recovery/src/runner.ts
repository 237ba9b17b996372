import { constants } from 'node:os'
import { performance } from 'node:perf_hooks'
import type { CheckRun, CheckSpec, SandboxKind } from '@taskward/protocol'
import { BoundedOutput } from './output'
import { launch, whichAll } from './launcher'
import { bwrapCommand, checkPath, programExists, scrubbedEnv, type CheckArea } from './sandbox'

export interface RunOptions {
  /** The sandbox that runs (already resolved: `auto` is not a kind). */
  sandbox: SandboxKind
  outputLimitBytes: number
  /** bwrap: directories replaced by an empty tmpfs (the data directory). */
  hidden?: string[]
  /** The workspace the area is a copy of: PATH entries inside it are left out (`checkPath`). */
  workspace?: string
  /** The area's mounted directories (`area.mounts`) and where each comes from (hidden directories inside them are hidden again). */
  mounts?: readonly { rel: string, source: string }[]
  /** The real path of the workspace the area is a copy of: with mounts, a relative program is looked up there. */
  workspaceReal?: string
  /** Aborted when the run's owner (the recovery plugin) is disposed: the check is killed, the run rejects `ABORTED`. */
  signal?: AbortSignal
}

/**
 * After the check's process exited (or its group was killed on timeout), how long its output may
 * still arrive. A descendant that left the process group (`setsid cmd &`) can hold the pipes open for
 * as long as it lives; waiting for it would let it outlive the timeout.
 */
export const OUTPUT_GRACE_MS = 200

/**
 * bubblewrap reports a sandboxed process killed by signal N as exit status 128 + N (it cannot die of the
 * signal itself). Read it back as the signal, so a check killed inside the sandbox is judged as one
 * killed outside it. The price: a bwrap check that itself exits 129–192 is judged as killed.
 */
export function bwrapExit(code: number | null, signal: NodeJS.Signals | null): { code: number | null, signal: NodeJS.Signals | null } {
  if (signal || code === null || code <= 128 || code > 128 + 64) return { code, signal }
  const name = Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0] as NodeJS.Signals | undefined
  return name ? { code: null, signal: name } : { code, signal }
}

/**
 * Run one check in `area`: argv spawned directly (never through a shell), cwd = the copy, the scrubbed
 * environment, its own process group (killed as a whole on timeout and after exit), bounded output.
 * It ends at the latest `OUTPUT_GRACE_MS` after the process exited or the timeout killed it, whoever
 * still holds its output. The process is started by the launcher process (`launch`), never by the
 * host process itself. Resolves to the raw run for `checkResultOf`; a program that cannot be started is
 * `not-runnable`.
 */
export async function runCheck(spec: CheckSpec, area: CheckArea, options: RunOptions): Promise<CheckRun> {
  const started = performance.now()
  // The check's PATH, worked out once (it resolves every entry): its lookups and its environment's.
  const path = checkPath(undefined, options.workspace)
  let argv = spec.argv
  if (options.sandbox === 'bwrap') {
    // bwrap, env and (a bare name) the check's program, looked up on the check's PATH in one request
    // to the launcher (`bwrapArgv` and `programExists` each asked once: a round trip per lookup).
    const bare = !spec.argv[0].includes('/')
    const [bwrap, env, program] = await whichAll(['bwrap', 'env', ...bare ? [spec.argv[0]] : []], path)
    // bwrap is required before anything else: a check never runs unsandboxed instead.
    argv = bwrapCommand({ bwrap, env }, area, spec.argv, options.hidden, options.mounts)
    const exists = bare ? program !== undefined
      : await programExists(spec.argv[0], area.work, undefined, options.workspace, area.mounts.length ? options.workspaceReal : undefined)
    if (!exists) {
      // Inside bubblewrap a missing program is only an exit status; outside it is ENOENT. Same verdict.
      return { runnerError: 'not-runnable', durationMs: performance.now() - started, output: `ENOENT: cannot start ${spec.argv[0]}` }
    }
  }
  const output = new BoundedOutput(options.outputLimitBytes)
  const outcome = await launch({
    file: argv[0], args: argv.slice(1), cwd: area.work, env: scrubbedEnv(area.home, path), timeoutMs: spec.timeoutMs, graceMs: OUTPUT_GRACE_MS,
    outputLimitBytes: options.outputLimitBytes, ...options.sandbox === 'bwrap' && area.mounts.length ? { area: area.root } : {},
  }, output, options.signal)
  const durationMs = performance.now() - started
  if (outcome.spawnError !== undefined) {
    const notRunnable = ['ENOENT', 'EACCES', 'ENOTDIR', 'ENOEXEC'].includes(outcome.spawnError)
    return { runnerError: notRunnable ? 'not-runnable' : 'runner-fault', durationMs, output: `${outcome.spawnError}: cannot start ${spec.argv[0]}` }
  }
  const exit = outcome.exit
  const status = options.sandbox === 'bwrap' ? bwrapExit(exit?.code ?? null, exit?.signal ?? null) : exit
  const text = output.text()
  return {
    exitCode: status?.code ?? null, signal: status?.signal ?? null, ...outcome.timedOut ? { timedOut: true } : {},
    durationMs, output: options.sandbox === 'bwrap' && status?.code !== 0 ? text + readOnlyNote(text, area.mounts) : text,
  }
}

/**
 * Said after the output of a failed check that met a read-only file system while dependency
 * directories were mounted: why, and what to do. The check's result stands as it is.
 */
export function readOnlyNote(output: string, mounts: string[]): string {
  if (!mounts.length || !/EROFS|read-only file system/i.test(output)) return ''
  const listed = mounts.slice(0, 5).join(', ') + (mounts.length > 5 ? ` and ${mounts.length - 5} more` : '')
  return `\n[taskward] The dependency directories (${listed}) are mounted read-only in the check's sandbox, not copied; a check that writes `
    + 'there fails. Write build output and caches elsewhere (the copy of the workspace and HOME are writable), or set sandbox: copy.\n'
}

import { realpathSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { dataDirectory } from '@taskward/plugin-database'
import { CHECK_DEFAULT_PATH, checkSearchPath, TaskwardError, type SandboxKind } from '@taskward/protocol'
import { isExecutable, prepareInLauncher, removeInLauncher, whichAll } from './launcher'

/** A fresh place for one verification: the candidate's copy and an empty home. */
export interface CheckArea {
  /** The parent of everything below; removed afterwards. */
  root: string
  /** The copy of the candidate: the checks' working directory. */
  work: string
  /** HOME of the checks. */
  home: string
  /** Paths that stand for "this run's temp area" in output (signatures must not see them). */
  roots: string[]
  /**
   * Dependency directories (paths relative to `work`) that are not in the copy: a bwrap check gets them
   * read-only (`--ro-bind-fd`), as the launcher opened them. Empty in copy mode.
   */
  mounts: string[]
}

/**
 * Copy `cwd` into a new area under `base` (the temp directory unless told: `MemoryCopies`). The root `.git` is left out unless the candidate is a git commit
 * (then checks may need the repository). Symlinks are copied as links, not followed. `exclude` (real
 * paths: `hiddenDirectories`) is left out — a data directory inside the workspace (the default `data/`
 * of a host run there) would hand a sandboxed check the session database and tokens in its own copy. The launcher
 * process makes it: the copy's dozens of file-system round trips would each wait for a busy host's
 * event loop (measured at 50 concurrent tasks: 160 ms a copy of two files, 15 ms idle).
 */
export async function prepareArea(cwd: string, keepGit: boolean, exclude: string[] = [], dependencies?: { names: string[], paths: string[] },
  mount = false, base = tmpdir()): Promise<CheckArea> {
  const { root, real, mounts } = await prepareInLauncher({ cwd, base, keepGit, exclude, dependencies, mount })
  const work = join(root, 'work')
  const home = join(root, 'home')
  const roots = [...new Set([work, home, root, join(real, 'work'), join(real, 'home'), real])]
  return { root, work, home, roots, mounts }
}

/**
 * Remove the area (by the launcher; by the host when the launcher cannot, so no copy is left behind).
 * Never rejects: the checks' verdicts stand whatever became of their copy; a copy that could not be
 * removed resolves with the error, for the caller to log.
 */
export async function removeArea(area: CheckArea): Promise<Error | undefined> {
  try {
    await removeInLauncher(area.root).catch(() => rm(area.root, { recursive: true, force: true }))
  } catch (error) {
    return error as Error
  }
}

/** A check's PATH when the host has none, or none absolute (never empty: execvp reads that as the cwd). */
const DEFAULT_PATH = CHECK_DEFAULT_PATH

/**
 * `path` and its real path (when it has one). Resolved afresh on every call, by the C library's
 * realpath (`.native`): Node's JavaScript realpathSync lstat()s each component in turn, and every check
 * resolves each PATH entry three times (its argv, its program lookup, its environment) on the host's
 * event loop — ~0.5 ms a PATH against ~0.13.
 */
function namesOf(path: string): string[] {
  try {
    return [resolve(path), realpathSync.native(path)]
  } catch {
    return [resolve(path)]
  }
}

/**
 * Whether `entry` (an absolute PATH entry) is `workspace` or lies inside it, as written or resolved —
 * or cannot be resolved now: a dangling link may point into the workspace, and the candidate could
 * create its target after the PATH was worked out (a missing directory holds no program anyway).
 */
function inside(entry: string, workspace: string[]): boolean {
  const names = namesOf(entry)
  if (names.length < 2) return true
  return names.some((name) => workspace.some((root) => isWithin(root, name)))
}

/** Whether the absolute path `path` is `root` or lies inside it (by their text: nothing is resolved). */
export function isWithin(root: string, path: string): boolean {
  const rest = relative(root, path)
  return rest === '' || (rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest))
}

/**
 * The PATH of a check, and of every lookup made for one: the host's absolute entries only. A relative
 * entry (`.`, `bin`, `node_modules/.bin`, or an empty one, which POSIX reads as the cwd) would be looked
 * up against the host's cwd but resolved by the check against its own — the candidate's copy, files a
 * model wrote — so a planted `bin/sh` would shadow the system's. `relativePathWarning` says so at start.
 * With `workspace`, an absolute entry inside it is left out too: its programs are the candidate's files
 * (a host started by `npx` or `npm run` in the workspace has `<workspace>/node_modules/.bin` first on
 * PATH), and the host itself would run a planted `bwrap` or `git` from there, outside any sandbox.
 */
export function checkPath(hostPath = process.env.PATH ?? DEFAULT_PATH, workspace?: string): string {
  const roots = workspace === undefined ? [] : namesOf(workspace)
  const kept = checkSearchPath(hostPath).split(delimiter).filter((entry) => !(roots.length && inside(entry, roots)))
  return kept.length ? kept.join(delimiter) : DEFAULT_PATH
}

/** The warning to log once at plugin start when the host's PATH has entries a check will not get. */
export function relativePathWarning(hostPath = process.env.PATH ?? DEFAULT_PATH): string | undefined {
  const dropped = hostPath.split(delimiter).filter((entry) => !isAbsolute(entry))
  if (!dropped.length) return undefined
  return `recovery checks do not get the relative PATH entries ${dropped.map((entry) => JSON.stringify(entry)).join(', ')}`
    + ' (an empty entry means the working directory): a check would resolve them in its copy of the candidate, where the agent\'s files could stand in for '
    + 'system programs. Put absolute directories on PATH, or name a project-local program by its path in the check\'s argv (e.g. ["./node_modules/.bin/jest"]), '
    + 'which is resolved in the copy as before.'
}

/**
 * The whole environment of a check: PATH (to find programs; its absolute entries only, see
 * `checkPath`), a fixed LANG and TZ, and a temp HOME. Nothing else from the host passes — no
 * credentials, tokens or TASKWARD_* variables.
 */
export function scrubbedEnv(home: string, hostPath = process.env.PATH ?? DEFAULT_PATH, workspace?: string): Record<string, string> {
  return { PATH: checkPath(hostPath, workspace), LANG: 'C.UTF-8', TZ: 'UTC', HOME: home }
}

/**
 * The absolute path of `program` on `path` (its absolute entries, as a check gets it: `checkPath`), or
 * undefined: looked up afresh on every call (a PATH change or a replaced binary is seen at once), in the
 * launcher process, so a check's lookups cost the event loop one message instead of a file-system round
 * trip per PATH entry.
 */
export async function findOnPath(program: string, path = process.env.PATH ?? DEFAULT_PATH, workspace?: string): Promise<string | undefined> {
  return (await whichAll([program], checkPath(path, workspace)))[0]
}

/** The configured sandbox as it will run, and the warning to log once when that is weaker than asked. */
export interface SandboxChoice {
  kind: SandboxKind
  warning?: string
}

/** Why copy mode is not isolation, in one sentence (warnings and refusals repeat it). */
const COPY_RISK = 'a check in copy mode runs as the host\'s user: it can read and write your files, use the network, and read the host\'s '
  + 'environment (API keys, tokens) through /proc/<host pid>/environ'

/**
 * Resolve the configured sandbox once, at plugin start. `auto` is bubblewrap, and never falls back to
 * copy by itself: where `bwrap` is not on PATH the checks are refused (`bwrapArgv`) and a warning says
 * so at start, naming the fixes (install bubblewrap, or opt in to `sandbox: copy`). `bwrap` is strict
 * the same way. `copy` is taken as asked, with a warning of what it does not isolate.
 */
export async function chooseSandbox(configured: 'auto' | SandboxKind): Promise<SandboxChoice> {
  if (configured === 'copy') {
    return { kind: 'copy', warning: `recovery checks are NOT isolated (sandbox: copy): ${COPY_RISK}. Use sandbox: auto or bwrap where bubblewrap is installed.` }
  }
  if (configured === 'bwrap' || await findOnPath('bwrap')) return { kind: 'bwrap' }
  return {
    kind: 'bwrap',
    warning: 'recovery checks will be REFUSED: bubblewrap (bwrap) is not installed, and sandbox "auto" does not fall back to an unisolated copy. '
      + `Install bubblewrap (e.g. apt-get install bubblewrap), or set sandbox: copy explicitly to accept that ${COPY_RISK}.`,
  }
}

/**
 * Directories a sandboxed check must not see: the Taskward data directory (the session database,
 * tokens). Only existing ones, resolved through links, and never `/`. Looked up synchronously (a
 * realpath and a stat of the operator's own directory, microseconds): every verification asks several
 * times, and on a busy host each asynchronous call waited 15–25 ms for libuv's pool and the event loop.
 */
export async function hiddenDirectories(): Promise<string[]> {
  const hidden: string[] = []
  for (const dir of [dataDirectory()]) {
    let real: string | undefined
    try {
      real = realpathSync.native(dir)
    } catch {}
    if (real && real !== '/' && statSync(real).isDirectory()) hidden.push(real)
  }
  return hidden
}

/**
 * Whether argv[0] can be found the way a spawn would find it (a path relative to `cwd`, or on the
 * check's PATH: `path`'s absolute entries). With `source` (the workspace the copy is of, when its
 * dependency directories are mounted, not copied) a relative program is looked up there: the copy holds
 * only empty mount points for them, while the check sees the workspace's directories there
 * (`node_modules/.bin/tsc`, or a project link into `.venv`), and the rest of the copy is the workspace's.
 * bwrap reports a missing program as an ordinary exit status, so this decides `not-runnable` there.
 */
export async function programExists(program: string, cwd: string, path = process.env.PATH ?? DEFAULT_PATH, workspace?: string,
  source?: string): Promise<boolean> {
  if (program.includes('/')) return isExecutable(isAbsolute(program) ? program : join(source ?? cwd, program))
  return (await findOnPath(program, path, workspace)) !== undefined
}

/** The copy's paths of the `hidden` directories that lie inside a mounted directory's source. */
function hiddenInMounts(area: CheckArea, hidden: string[], mounts: readonly { rel: string, source: string }[]): string[] {
  return hidden.flatMap((dir) => mounts.flatMap(({ rel, source }) => {
    const rest = relative(source, dir)
    return rest && rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest) ? [join(area.work, rel, rest)] : []
  }))
}

/**
 * The argv that runs `argv` in bubblewrap: every namespace unshared (no network), no capabilities
 * (also when the host runs as root), the host read-only,
 * a fresh /dev, /proc and /tmp, `hidden` directories replaced by empty tmpfs (the data directory), and
 * only the copy and the temp home writable; the area's dependency directories mounted read-only from
 * the descriptors the launcher passes (3, 4…, in `area.mounts` order). $HOME stays visible read-only: programs may live there.
 * Refused when bwrap is not installed (`SERVICE_UNAVAILABLE`): running the check unsandboxed instead
 * would silently weaken the configured policy.
 */
export async function bwrapArgv(area: CheckArea, argv: string[], hidden: string[] = [], workspace?: string,
  mounts: readonly { rel: string, source: string }[] = []): Promise<string[]> {
  // On the check's PATH: a relative entry would name a directory of the copy (bwrap runs there), an
  // entry inside the workspace (`workspace`, the directory copied) the candidate's own files.
  const [bwrap, env] = await whichAll(['bwrap', 'env'], checkPath(undefined, workspace))
  return bwrapCommand({ bwrap, env }, area, argv, hidden, mounts)
}

/**
 * `bwrapArgv` with `bwrap` and `env` already looked up on the check's PATH (a runner that looks up the
 * check's own program at the same time asks the launcher once). Refused when bwrap was not found.
 */
export function bwrapCommand(found: { bwrap?: string, env?: string }, area: CheckArea, argv: string[], hidden: string[] = [],
  mounts: readonly { rel: string, source: string }[] = []): string[] {
  const { bwrap, env } = found
  if (!bwrap) {
    throw new TaskwardError('SERVICE_UNAVAILABLE',
      'The recovery checks run in bubblewrap (sandbox: auto or bwrap) but bubblewrap (bwrap) is not installed on this host, so they were refused. '
      + `Install bubblewrap (e.g. apt-get install bubblewrap); or, only if you accept that ${COPY_RISK}, set sandbox: copy explicitly.`,
      { reason: 'bwrap-missing' })
  }
  return [
    // No capabilities: run as root, bubblewrap keeps them all, and with CAP_SYS_ADMIN a check remounts
    // the host read-write (`mount -o remount,bind,rw /`) and unmounts the private /tmp over it.
    bwrap, '--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL',
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
    // Before the binds of the area, so an area inside a hidden directory stays reachable.
    ...hidden.flatMap((dir) => ['--tmpfs', dir]),
    '--bind', area.work, area.work, '--bind', area.home, area.home,
    ...area.mounts.flatMap((rel, i) => ['--ro-bind-fd', String(3 + i), join(area.work, rel)]),
    // A hidden directory inside a mounted one (a data directory under node_modules) would come back
    // with the mount, at its place in the copy: hidden there again.
    ...hiddenInMounts(area, hidden, mounts).flatMap((dir) => ['--tmpfs', dir]),
    '--chdir', area.work,
    // bwrap always sets PWD; `env -u PWD` (which execs the check) keeps exactly the scrubbed environment.
    '--', ...env ? [env, '-u', 'PWD', '--'] : [], ...argv,
  ]
}

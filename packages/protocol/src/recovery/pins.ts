import { createHash } from 'node:crypto'
import { posix } from 'node:path'
import { Minimatch } from 'minimatch'
import { TaskwardError } from '../errors'
import type { CheckResult, CheckSpec } from './checks'

/**
 * Pinned checks. A check trusts some files: the ones its `pin` globs name and the program it runs when
 * that program lives in the workspace. While a task runs, the agent may not change them (write tools
 * refuse with `CHECK_PINNED`), and a change made anyway (a shell, another process) makes the check's
 * verdict INCONCLUSIVE with reason `pin_changed` — never a pass. Pure: the plugin hashes the files.
 */

export const MAX_PIN_PATTERNS = 32
export const MAX_PIN_PATTERN_LENGTH = 200
/** Files a pinned set may hold; past it the set is refused rather than partly stamped. */
export const MAX_PINNED_FILES = 5000

/** Package managers whose `<pm> test` / `<pm> run x` reads its script from package.json. */
const PACKAGE_SCRIPT_RUNNERS = new Set(['npm', 'pnpm', 'yarn', 'bun'])
/** Interpreters whose first operand is the program: `node test/run.js`, `sh scripts/check.sh`. */
const INTERPRETERS = new Set(['node', 'sh', 'bash', 'dash', 'zsh', 'python', 'python3', 'perl', 'ruby', 'tsx', 'deno'])
const MAKE = new Set(['make', 'gmake'])

function refuse(message: string, details?: Record<string, unknown>) {
  return new TaskwardError('PATTERN_REJECTED', message, details)
}

/**
 * A workspace-relative path in canonical form (posix separators, no `.` segments), or undefined when it
 * leaves the workspace or is absolute. Used for program paths and for the paths a tool is asked to write.
 */
export function workspaceRelative(path: string): string | undefined {
  if (typeof path !== 'string' || !path || path.includes('\0')) return undefined
  const slashed = path.replace(/\\/g, '/')
  if (slashed.startsWith('/')) return undefined
  const normal = posix.normalize(slashed).replace(/\/+$/, '')
  if (normal === '.' || normal === '' || normal === '..' || normal.startsWith('../')) return undefined
  return normal
}

/**
 * Validate one pin pattern: a relative glob inside the workspace. Negations (`!x`), absolute paths,
 * `..` segments and empty patterns are refused: a pin names what is trusted, never what is not.
 */
export function validatePinPattern(pattern: unknown, checkId: string): string {
  if (typeof pattern !== 'string' || !pattern.trim()) {
    throw refuse(`Check "${checkId}": a pin must be a non-empty glob relative to the workspace, e.g. "test/**".`, { checkId })
  }
  if (pattern.length > MAX_PIN_PATTERN_LENGTH) {
    throw refuse(`Check "${checkId}": pin "${pattern.slice(0, 40)}…" is longer than ${MAX_PIN_PATTERN_LENGTH} characters.`, { checkId })
  }
  if (pattern.startsWith('!') || pattern.startsWith('#')) {
    throw refuse(`Check "${checkId}": pin "${pattern}" is a negation or comment; list only the files the check trusts.`, { checkId, pattern })
  }
  const slashed = pattern.replace(/\\/g, '/')
  if (slashed.startsWith('/') || slashed.split('/').some((part) => part === '..')) {
    throw refuse(`Check "${checkId}": pin "${pattern}" leaves the workspace; write it relative to the workspace root without "..".`, { checkId, pattern })
  }
  const normal = slashed.replace(/^(\.\/)+/, '').replace(/\/+$/, '')
  if (!normal || normal === '.') throw refuse(`Check "${checkId}": pin "${pattern}" names the workspace root; use "**" to pin everything.`, { checkId, pattern })
  return normal
}

/** Validate a check's `pin` list (absent stays absent); refuses more than `MAX_PIN_PATTERNS`. */
export function validatePins(value: unknown, checkId: string): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) throw refuse(`Check "${checkId}": pin must be a list of globs, e.g. ["package.json", "test/**"].`, { checkId })
  if (value.length > MAX_PIN_PATTERNS) throw refuse(`Check "${checkId}": at most ${MAX_PIN_PATTERNS} pin patterns.`, { checkId })
  return [...new Set(value.map((pattern) => validatePinPattern(pattern, checkId)))]
}

/** The first operand of an interpreter's argv (skipping options), if any. */
function firstOperand(args: readonly string[]): string | undefined {
  for (const arg of args) {
    if (arg === '--') continue
    if (arg.startsWith('-')) return undefined // `node -e …`, `sh -c …`: the program is inline, not a file
    return arg
  }
  return undefined
}

/**
 * The files a check trusts without being told, because they are the program it runs:
 * - argv[0] when it is a relative path inside the workspace (`./run-tests.sh`, `bin/check`);
 * - `package.json` for a package manager (`npm test`, `pnpm run lint`): the script is defined there;
 * - the script of an interpreter (`node test/run.js`, `sh scripts/check.sh`) when it is a relative path;
 * - `Makefile`/`makefile`/`GNUmakefile` for make.
 * A program on PATH (`/usr/bin/env`, `cargo`) is not in the workspace and is not pinned.
 * An inline program (`sh -c "…"`, `node -e "…"`) lives in the check's argv, which only a user sets.
 */
export function impliedPins(spec: Pick<CheckSpec, 'argv'>): string[] {
  const [program, ...args] = spec.argv
  const pins: string[] = []
  const inWorkspace = (path: string | undefined) => {
    if (path === undefined || !path.includes('/')) return undefined
    return workspaceRelative(path)
  }
  const direct = inWorkspace(program)
  if (direct) pins.push(direct)
  const name = posix.basename(program ?? '')
  if (PACKAGE_SCRIPT_RUNNERS.has(name)) pins.push('package.json')
  if (MAKE.has(name)) pins.push('Makefile', 'makefile', 'GNUmakefile')
  if (INTERPRETERS.has(name)) {
    const operand = firstOperand(name === 'deno' && args[0] === 'run' ? args.slice(1) : args)
    const script = operand === undefined ? undefined : workspaceRelative(operand)
    if (script) pins.push(script)
  }
  return [...new Set(pins)]
}

/** Every pattern a check trusts: its own `pin` list plus the implied ones. */
export function effectivePins(spec: CheckSpec): string[] {
  return [...new Set([...(spec.pin ?? []), ...impliedPins(spec)])]
}

/** A pinned path matched by `checkId`'s `pattern`. */
export interface PinHit {
  checkId: string
  pattern: string
}

/**
 * Matches workspace-relative paths against the pins of a set of checks. Globs follow minimatch with
 * `dot: true` (dotfiles match `*`); a literal pattern matches exactly that path.
 */
interface PinEntry {
  checkId: string
  pattern: string
  glob: Minimatch
}

export class PinMatcher {
  private readonly entries: readonly PinEntry[]

  constructor(specs: readonly CheckSpec[], entries?: readonly PinEntry[]) {
    this.entries = entries ?? specs.flatMap((spec) => effectivePins(spec).map((pattern) => ({
      checkId: spec.id, pattern, glob: new Minimatch(pattern, { dot: true, nocomment: true, nonegate: true }),
    })))
  }

  get empty() {
    return this.entries.length === 0
  }

  /** The pins that `path` (workspace-relative) falls under; empty when it is not pinned. */
  hits(path: string): PinHit[] {
    const relative = workspaceRelative(path)
    if (relative === undefined) return []
    return this.entries.filter((entry) => entry.glob.match(relative)).map(({ checkId, pattern }) => ({ checkId, pattern }))
  }

  /** Whether a directory may hold pinned files (so a walk can skip the others). */
  mayContain(directory: string): boolean {
    const relative = directory === '' ? '' : workspaceRelative(directory)
    if (relative === undefined) return false
    if (relative === '') return this.entries.length > 0
    return this.entries.some((entry) => entry.glob.match(relative, true))
  }

  /** The matcher of one check's pins. */
  only(checkId: string): PinMatcher {
    return new PinMatcher([], this.entries.filter((entry) => entry.checkId === checkId))
  }
}

/** One pinned file as stamped: its path and `sha256` of its content (`link:` + target for a symlink). */
export interface PinnedFile {
  path: string
  hash: string
}

export type PinChangeKind = 'modified' | 'deleted' | 'added'

export interface PinChange {
  path: string
  change: PinChangeKind
}

/** Sorted by path, one entry a path; refuses duplicates (a stamp is a set). */
export function normalizePinnedFiles(files: readonly PinnedFile[]): PinnedFile[] {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].path === sorted[i - 1].path) throw new TaskwardError('BAD_REQUEST', `Pinned file "${sorted[i].path}" is listed twice.`)
  }
  return sorted
}

/** sha256 over the sorted (path, hash) pairs: one value naming a pinned set. */
export function pinnedSetDigest(files: readonly PinnedFile[]): string {
  const hash = createHash('sha256').update('taskward-pins\0')
  for (const file of normalizePinnedFiles(files)) hash.update(`${file.path}\0${file.hash}\0`)
  return hash.digest('hex')
}

/**
 * What changed between the baseline and `now`, restricted to the paths `matcher` pins (both sides are
 * filtered, so a pin added to a check later shows its files as `added`). Sorted by path.
 */
export function comparePinnedSets(baseline: readonly PinnedFile[], now: readonly PinnedFile[], matcher?: PinMatcher): PinChange[] {
  const keep = (file: PinnedFile) => !matcher || matcher.hits(file.path).length > 0
  const before = new Map(baseline.filter(keep).map((file) => [file.path, file.hash]))
  const after = new Map(now.filter(keep).map((file) => [file.path, file.hash]))
  const changes: PinChange[] = []
  for (const [path, hash] of before) {
    const current = after.get(path)
    if (current === undefined) changes.push({ path, change: 'deleted' })
    else if (current !== hash) changes.push({ path, change: 'modified' })
  }
  for (const path of after.keys()) if (!before.has(path)) changes.push({ path, change: 'added' })
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** At most this many changes are kept as evidence in a check result. */
export const MAX_PIN_CHANGES_RECORDED = 20

/**
 * The verdict effect of a changed pin: the check is not run (it would be judging with what the agent
 * could have rewritten) and its result is INCONCLUSIVE with reason `pin_changed`, naming the paths.
 */
export function pinChangedResult(spec: Pick<CheckSpec, 'id'>, changes: readonly PinChange[]): CheckResult {
  const kept = changes.slice(0, MAX_PIN_CHANGES_RECORDED)
  const listed = kept.map((change) => `${change.path} (${change.change})`).join(', ')
  return {
    checkId: spec.id,
    verdict: 'INCONCLUSIVE',
    reason: 'pin_changed',
    durationMs: 0,
    pinChanges: kept.map((change) => ({ ...change })),
    outputExcerpt: `not run: files pinned by check "${spec.id}" changed since the task's baseline: ${listed}${changes.length > kept.length ? ` and ${changes.length - kept.length} more` : ''}`,
  }
}

/** The first pinned-file change recorded in a set of check results, as `<check>: <path> (<change>)`. */
export function describePinChanges(checks: readonly CheckResult[]): string[] {
  return checks.filter((check) => check.reason === 'pin_changed')
    .flatMap((check) => (check.pinChanges ?? []).map((change) => `${check.checkId}: ${change.path} (${change.change})`))
}

/** Why a pins baseline is (re)stamped. */
export type PinBaselineReason = 'task-start' | 'reopen' | 'checks-set' | 'accepted' | 'first-attempt'

/**
 * Whether a task entering `active` needs a new baseline: none yet, or a new acceptance cycle (a
 * user-confirmed reopen) since the last one. Resuming a paused task never re-stamps: a change made
 * while it was paused must still be caught.
 */
export function needsPinBaseline(task: { phase: string, acceptanceCycle?: number }, baseline?: { acceptanceCycle?: number }): PinBaselineReason | undefined {
  if (task.phase !== 'active') return undefined
  if (!baseline) return 'task-start'
  if ((task.acceptanceCycle ?? 1) !== (baseline.acceptanceCycle ?? 1)) return 'reopen'
  return undefined
}

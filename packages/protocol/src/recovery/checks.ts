import Schema from 'schemastery'
import { TaskwardError } from '../errors'
import { failureSignature, SignatureOptions } from './signature'
import { validatePins, type PinChange } from './pins'
import { CHECK_FAILURE_REASONS, CHECK_VERDICTS, PATH_MAX, PIN_CHANGES, SHA256_PATTERN, SIGNAL_MAX } from './record-values'

/**
 * A controller-owned validation check: an argv command (never a shell string) run against a copy of
 * the candidate with a timeout. Exit 0 passes; anything else is evidence against the candidate.
 */
export interface CheckSpec {
  id: string
  argv: string[]
  timeoutMs: number
  /**
   * Globs of the workspace files the check trusts (`["package.json", "test/**"]`). The program it runs,
   * when it lives in the workspace, is pinned without being listed (`impliedPins`). Absent: only those.
   */
  pin?: string[]
}

export const CHECK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
/** One hour: a longer check is a configuration mistake, not a validation. */
export const MAX_CHECK_TIMEOUT_MS = 3_600_000
/** Bytes of output kept as evidence in a record; the tail, where failures are summarized. */
export const OUTPUT_EXCERPT_MAX = 4000

export const CheckSpecSchema: Schema<CheckSpec> = Schema.object({
  id: Schema.string().pattern(CHECK_ID_PATTERN).required().description('Stable id of the check.'),
  argv: Schema.array(Schema.string()).required().description('Command and arguments, e.g. ["npm", "test"]. Never a shell string.'),
  timeoutMs: Schema.natural().min(1).max(MAX_CHECK_TIMEOUT_MS).default(600_000).description('Kill the check after this long.'),
  // Optional without a default: an absent pin list stays absent (readers never fabricate one).
  pin: Schema.union([Schema.array(Schema.string()), Schema.const(undefined)]).description('Globs of workspace files the check trusts (the agent may not change them while a task runs), e.g. ["package.json", "test/**"].'),
}) as Schema<CheckSpec>

export type CheckVerdict = 'PASS' | 'FAIL' | 'INCONCLUSIVE'

/**
 * Why a check did not simply pass or fail on its exit code. `timeout` is a FAIL (the candidate did not
 * finish in time); `killed` (a signal we did not send) and `runner-fault` (the sandbox or copy failed)
 * are INCONCLUSIVE; `not-runnable` (argv[0] cannot be executed) is INCONCLUSIVE and non-retryable,
 * because no agent turn can repair the controller's configuration. `pin_changed` (a file the check
 * trusts changed since the task's baseline; the check was not run) is INCONCLUSIVE and stops the task.
 */
export type CheckReason = 'timeout' | 'runner-fault' | 'killed' | 'not-runnable' | 'pin_changed'

/** The recorded outcome of one check on one candidate. */
export interface CheckResult {
  checkId: string
  verdict: CheckVerdict
  exitCode?: number
  signal?: string
  durationMs: number
  reason?: CheckReason
  /** `failureSignature` of a FAIL; absent for PASS and INCONCLUSIVE. */
  signature?: string
  /** Bounded tail of the output (at most `OUTPUT_EXCERPT_MAX` characters). */
  outputExcerpt?: string
  /** `pin_changed`: the pinned files that changed (absent otherwise and on older records). */
  pinChanges?: PinChange[]
}

export const CheckResultSchema: Schema<CheckResult> = Schema.object({
  checkId: Schema.string().pattern(CHECK_ID_PATTERN).required(),
  verdict: Schema.union([...CHECK_VERDICTS]).required(),
  exitCode: Schema.number(),
  signal: Schema.string().max(SIGNAL_MAX),
  durationMs: Schema.natural().required(),
  reason: Schema.union([...CHECK_FAILURE_REASONS]),
  signature: Schema.string().pattern(SHA256_PATTERN),
  outputExcerpt: Schema.string().max(OUTPUT_EXCERPT_MAX),
  pinChanges: Schema.union([Schema.array(Schema.object({
    path: Schema.string().min(1).max(PATH_MAX).required(),
    change: Schema.union([...PIN_CHANGES]).required(),
  })), Schema.const(undefined)]),
}) as Schema<CheckResult>

function invalid(message: string, details?: Record<string, unknown>) {
  return new TaskwardError('CONFIG_INVALID', message, details)
}

/**
 * Validate one check from configuration. A string `argv` is refused: checks are never run through a
 * shell, so quoting and `&&` would silently mean something else.
 */
export function validateCheckSpec(value: unknown): CheckSpec {
  const raw = value as Partial<Record<keyof CheckSpec, unknown>> | undefined
  const id = typeof raw?.id === 'string' ? raw.id : undefined
  if (!raw || typeof raw !== 'object' || !id || !CHECK_ID_PATTERN.test(id)) {
    throw invalid('A recovery check needs an id of letters, digits, ".", "_" or "-" (at most 64). Fix the check in the recovery configuration.', { id: raw?.id })
  }
  if (typeof raw.argv === 'string') {
    throw invalid(`Check "${id}": argv is a shell string. Write it as an array of arguments, e.g. ["npm", "test"]; checks never run through a shell.`, { id })
  }
  if (!Array.isArray(raw.argv) || raw.argv.length === 0 || raw.argv.some((arg) => typeof arg !== 'string')
    || (raw.argv[0] as string).length === 0) {
    throw invalid(`Check "${id}": argv must be a non-empty array of strings whose first element names the program, e.g. ["npm", "test"].`, { id })
  }
  const timeoutMs = raw.timeoutMs ?? 600_000
  if (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_CHECK_TIMEOUT_MS) {
    throw invalid(`Check "${id}": timeoutMs must be a whole number of milliseconds between 1 and ${MAX_CHECK_TIMEOUT_MS}.`, { id })
  }
  const pin = validatePins((raw as { pin?: unknown }).pin, id)
  return { id, argv: [...raw.argv as string[]], timeoutMs, ...pin ? { pin } : {} }
}

/**
 * The index of the first argument of `argv` that no process can receive (it holds a NUL byte), or -1.
 * Asked of new checks only (`/task checks`, the configuration): a recorded one is folded as it was.
 */
export function unpassableArgument(argv: readonly string[]): number {
  return argv.findIndex((arg) => arg.includes('\0'))
}

/** Validate the configured list of checks; ids must be unique. An empty list is valid: it means MISSING. */
export function validateCheckSpecs(value: unknown): CheckSpec[] {
  if (!Array.isArray(value)) throw invalid('Recovery checks must be a list of {id, argv, timeoutMs}. Use [] for no checks.')
  const specs = value.map(validateCheckSpec)
  const seen = new Set<string>()
  for (const spec of specs) {
    if (seen.has(spec.id)) throw invalid(`Check id "${spec.id}" is used twice. Give every check its own id.`, { id: spec.id })
    seen.add(spec.id)
  }
  return specs
}

/** What a runner observed for one check; `checkResultOf` turns it into evidence. */
export interface CheckRun {
  exitCode?: number | null
  signal?: string | null
  /** The runner killed the check because `timeoutMs` elapsed. */
  timedOut?: boolean
  /** The check never ran to an exit: argv[0] missing/not executable, or the sandbox failed. */
  runnerError?: 'not-runnable' | 'runner-fault'
  durationMs: number
  output: string
}

/** Classify a run into a `CheckResult` (see `CheckReason` for which outcomes are FAIL or INCONCLUSIVE). */
export function checkResultOf(spec: CheckSpec, run: CheckRun, options: SignatureOptions = {}): CheckResult {
  const base: CheckResult = { checkId: spec.id, verdict: 'INCONCLUSIVE', durationMs: Math.max(0, Math.round(run.durationMs)) }
  if (typeof run.exitCode === 'number') base.exitCode = run.exitCode
  if (run.signal) base.signal = run.signal
  if (run.output.length > 0) base.outputExcerpt = run.output.slice(-OUTPUT_EXCERPT_MAX)
  if (run.runnerError) return { ...base, reason: run.runnerError }
  if (run.timedOut) {
    return { ...base, verdict: 'FAIL', reason: 'timeout', signature: failureSignature(spec.id, 'timeout', options) }
  }
  if (run.exitCode === 0 && !run.signal) return { ...base, verdict: 'PASS' }
  if (typeof run.exitCode === 'number') {
    return { ...base, verdict: 'FAIL', signature: failureSignature(spec.id, run.output, options) }
  }
  return { ...base, reason: 'killed' }
}

/**
 * Every refusal in Taskward is a `TaskwardError`: a stable `code` that callers branch on, and a
 * message written for the person who has to act next. Codes are fields; never parse messages.
 */
export const ERROR_CODES = [
  'ACTIVE_TASK_CONFLICT',
  'ARTIFACT_CHANGED',
  'ARTIFACT_LIMIT',
  'ARTIFACT_UNAVAILABLE',
  'ARTIFACT_UNSUPPORTED',
  'REPAIR_STALE',
  'REPAIR_CONFIRMATION_REQUIRED',
  'REPAIR_EVIDENCE_INVALID',
  'REPAIR_NOT_DURABLE',
  'INVALID_REPAIR_SCOPE',
  'TASK_NOT_COMPLETE',
  'TASK_COMPLETED',
  'TASK_NOT_EXECUTING',
  'TASK_STALE',
  'TASK_NOT_FOUND',
  'TASK_INVALID',
  'TASK_STATE_UNAVAILABLE',
  'SUPERVISOR_DISABLED',
  'SUPERVISOR_POISONED',
  'READER_UNAVAILABLE',
  'RECORD_UNSUPPORTED',
  'SEQ_CONFLICT',
  'SESSION_NOT_FOUND',
  'AGENT_BUSY',
  'MODEL_NOT_FOUND',
  'MODEL_SCRIPT_EXHAUSTED',
  'TOOL_NOT_FOUND',
  'TOOL_INVALID_ARGS',
  'TOOL_FAILED',
  'TOOL_REPEATED',
  'PATH_OUTSIDE_WORKSPACE',
  'COMMAND_NOT_FOUND',
  'CONFIG_INVALID',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'BAD_REQUEST',
  'NOT_FOUND',
  'SERVICE_UNAVAILABLE',
  'VERDICT_NEGATIVE',
  'VALIDATION_MISSING',
  'BUDGET_EXHAUSTED',
  'CANDIDATE_ILLEGAL',
  'ABORTED',
  'INTERNAL',
  // Models (plugin-openai and the agent loop)
  'MODEL_UNAVAILABLE',
  'MODEL_CONTEXT_EXCEEDED',
  'TOKEN_BUDGET_EXHAUSTED',
  'REVIEW_FAULT',
  // The store (database, sessions, leases)
  'STORE_CORRUPT',
  'STORE_LOCKED',
  'STORE_UNAVAILABLE',
  'LEASE_HELD',
  'LEASE_LOST',
  // File tools and other trust boundaries
  'PATH_FORBIDDEN',
  'FILE_UNSUPPORTED',
  'PATTERN_REJECTED',
  // Recovery
  'CHECK_PINNED',
] as const

/** A code Taskward itself defines (these autocomplete). */
export type KnownErrorCode = typeof ERROR_CODES[number]

/** A plugin's own code: `<namespace>.<name>`, e.g. `acme.changelog_missing` (see `defineErrorCode`). */
export type PluginErrorCode = `${string}.${string}`

export type ErrorCode = KnownErrorCode | PluginErrorCode

/** The shape of a plugin code: a lower-case namespace, a dot, a lower_snake_case name. */
export const PLUGIN_ERROR_CODE_PATTERN = /^[a-z][a-z0-9-]*\.[a-z][a-z0-9_]*$/

/**
 * Plugin codes and their HTTP statuses. Kept on `globalThis` under a registered symbol so that every
 * copy of this module (ESM and CJS builds, two installed versions) sees the same registry: a code a
 * plugin defines through one copy is known to `TaskwardError.is` and `httpStatusOf` of the other.
 */
const REGISTRY_KEY = Symbol.for('taskward.error-codes')
const BRAND = Symbol.for('taskward.error')

function registry(): Map<string, number> {
  const holder = globalThis as unknown as Record<symbol, Map<string, number> | undefined>
  return holder[REGISTRY_KEY] ??= new Map()
}

const KNOWN = new Set<string>(ERROR_CODES)

/**
 * Declare a plugin's error code with the HTTP status the connection answers it with. Call it at module
 * level (codes end up in session logs, so they outlive a plugin's disposal). Defining a code again with
 * the same status is harmless (hot reload, two module copies); a different status, a malformed code or
 * a status outside 400–599 is `CONFIG_INVALID`. Returns the code, typed, for `new TaskwardError(code, …)`.
 */
export function defineErrorCode<C extends PluginErrorCode>(code: C, status: number): C {
  if (typeof code !== 'string' || !PLUGIN_ERROR_CODE_PATTERN.test(code)) {
    throw new TaskwardError('CONFIG_INVALID', `Error code "${String(code)}" must look like "namespace.name" `
      + '(lower case, e.g. "acme.changelog_missing"); the unnamespaced codes belong to Taskward.')
  }
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new TaskwardError('CONFIG_INVALID', `Error code "${code}" needs an HTTP status from 400 to 599, not ${status}.`)
  }
  const codes = registry()
  const known = codes.get(code)
  if (known !== undefined && known !== status) {
    throw new TaskwardError('CONFIG_INVALID', `Error code "${code}" is already defined with HTTP status ${known}; `
      + `it cannot also mean ${status}. Pick another code name.`)
  }
  codes.set(code, status)
  return code
}

/** True for a Taskward code or a plugin code defined with `defineErrorCode`. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (KNOWN.has(value) || registry().has(value))
}

/** The plugin codes defined so far, with their statuses (docs, diagnostics). */
export function pluginErrorCodes(): ReadonlyMap<string, number> {
  return new Map(registry())
}

/** The JSON shape of a coded error in tool results, command replies and HTTP bodies. */
export interface ErrorBody {
  error: string
  code: ErrorCode
  details?: Record<string, unknown>
}

/**
 * Set to `true` on `globalThis` by a process whose log an operator reads (`npm start`'s host worker, through
 * scripts/coded-errors.mjs) before any TaskwardError is made: every TaskwardError's `stack` is then its one
 * line `CODE: message`, so each log of a refusal — cordis logging a plugin's failed start, a warning — names
 * its code and leaves out the frames. A TaskwardError is an expected refusal; where it was thrown tells the
 * operator nothing. `INTERNAL` (a bug) and every other error keep their stacks. Unset (tests, embedding),
 * stacks stay whole.
 */
export const CODED_STACKS = Symbol.for('taskward.coded-stacks')

export class TaskwardError extends Error {
  override name = 'TaskwardError'

  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly details?: Record<string, unknown>,
  ) {
    super(message)
    Object.defineProperty(this, BRAND, { value: true })
    if ((globalThis as Record<symbol, unknown>)[CODED_STACKS] === true && code !== 'INTERNAL') {
      Object.defineProperty(this, 'stack', { value: `${code}: ${message}`, writable: true, configurable: true })
    }
  }

  /** `{error, code, details?}`: what an HTTP body carries. */
  toJSON(): ErrorBody {
    return errorBody(this)
  }

  /**
   * True for a TaskwardError, also one made by another copy of this module (a package loaded both as
   * ESM and CJS has two classes; the code must survive crossing between them), plugin codes included.
   */
  static is(value: unknown, code?: ErrorCode): value is TaskwardError {
    const coded = value instanceof TaskwardError || (value instanceof Error
      && ((value as any)[BRAND] === true || value.name === 'TaskwardError') && isErrorCode((value as any).code))
    return coded && (code === undefined || (value as TaskwardError).code === code)
  }
}

/**
 * HTTP status for a code: the connection endpoint answers `{error, code, details?}` with it. A plugin
 * code answers with the status it was defined with; a dotted code nobody defined is a bug (500).
 */
export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case 'BAD_REQUEST':
    case 'TOOL_INVALID_ARGS':
    case 'INVALID_REPAIR_SCOPE':
    case 'REPAIR_EVIDENCE_INVALID':
    case 'CONFIG_INVALID':
    case 'TASK_INVALID':
    case 'PATTERN_REJECTED':
    case 'FILE_UNSUPPORTED':
      return 400
    case 'UNAUTHORIZED':
      return 401
    case 'FORBIDDEN':
    case 'PATH_OUTSIDE_WORKSPACE':
    case 'PATH_FORBIDDEN':
      return 403
    case 'NOT_FOUND':
    case 'SESSION_NOT_FOUND':
    case 'TASK_NOT_FOUND':
    case 'COMMAND_NOT_FOUND':
    case 'TOOL_NOT_FOUND':
    case 'MODEL_NOT_FOUND':
      return 404
    case 'SERVICE_UNAVAILABLE':
    case 'MODEL_UNAVAILABLE':
    case 'STORE_UNAVAILABLE':
    case 'STORE_CORRUPT':
    case 'ARTIFACT_UNAVAILABLE':
    case 'READER_UNAVAILABLE':
      return 503
    case 'INTERNAL':
      return 500
    default:
      if (KNOWN.has(code)) return 409
      return registry().get(code) ?? 500
  }
}

/** The error of a tool result, command reply or turn summary: `{code, message, details?}`. */
export interface ErrorResult {
  code: ErrorCode
  message: string
  details?: Record<string, unknown>
}

/** `{code, message, details?}` of a coded error (also one made by another copy of this module). */
export function errorResult(error: TaskwardError): ErrorResult {
  return { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) }
}

/** `{error, code, details?}` of a coded error: the body of an HTTP refusal. */
export function errorBody(error: TaskwardError): ErrorBody {
  return { error: error.message, code: error.code, ...(error.details ? { details: error.details } : {}) }
}

/** Wrap anything thrown into a TaskwardError without losing a code that is already there. */
export function asTaskwardError(error: unknown, fallback: ErrorCode = 'INTERNAL'): TaskwardError {
  if (TaskwardError.is(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new TaskwardError(fallback, message)
}

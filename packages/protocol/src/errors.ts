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

export type ErrorCode = typeof ERROR_CODES[number]

export class TaskwardError extends Error {
  override name = 'TaskwardError'

  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly details?: Record<string, unknown>,
  ) {
    super(message)
  }

  toJSON() {
    return { error: this.message, code: this.code, ...(this.details ? { details: this.details } : {}) }
  }

  /**
   * True for a TaskwardError, also one made by another copy of this module (a package loaded both as
   * ESM and CJS has two classes; the code must survive crossing between them).
   */
  static is(value: unknown, code?: ErrorCode): value is TaskwardError {
    const coded = value instanceof TaskwardError || (value instanceof Error && value.name === 'TaskwardError'
      && (ERROR_CODES as readonly string[]).includes((value as any).code))
    return coded && (code === undefined || (value as TaskwardError).code === code)
  }
}

/** HTTP status for a code: the connection endpoint answers `{error, code}` with it. */
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
      return 409
  }
}

/** Wrap anything thrown into a TaskwardError without losing a code that is already there. */
export function asTaskwardError(error: unknown, fallback: ErrorCode = 'INTERNAL'): TaskwardError {
  if (TaskwardError.is(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new TaskwardError(fallback, message)
}

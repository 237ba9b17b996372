/*
 * The patterns, bounds and value lists of the recovery records: one place for both readings of them,
 * the schemas (records.ts, checks.ts) and the plain checks of the fast path (today.ts), so that the
 * two cannot drift apart.
 */

/** A workspace digest (sha256) or a git commit id (sha1 or sha256). */
export const DIGEST_PATTERN = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/
export const SHA256_PATTERN = /^[0-9a-f]{64}$/
/** An error code or a decision's reason. */
export const CODE_PATTERN = /^[A-Z][A-Z0-9_]*$/
/** A pinned file's hash: its content's sha256, a link's target, or a special file. */
export const PIN_HASH_PATTERN = /^(?:[0-9a-f]{64}|link:.{0,4096}|special)$/
export const ID_MAX = 200
export const TEXT_MAX = 2000
export const REASON_MAX = 100
export const PATH_MAX = 4096
/** A check's terminating signal's name. */
export const SIGNAL_MAX = 32

export const CANDIDATE_SOURCES = ['workspace', 'git'] as const
export const AGENT_CLAIMS = ['done', 'progress', 'blocked'] as const
export const REQUEST_TYPES = ['retry', 'strategy'] as const
export const SANDBOXES = ['copy', 'bwrap'] as const
export const AGGREGATE_VERDICTS = ['PASS', 'FAIL', 'INCONCLUSIVE', 'MISSING'] as const
export const DECISION_ACTIONS = ['RETRY', 'REVERIFY', 'CHANGE_STRATEGY', 'COMPLETE', 'REJECT_CANDIDATE', 'STOP'] as const
export const JOURNAL_STAGES = ['proposed', 'verified', 'committed', 'rolled-back'] as const
export const STRATEGY_PROPOSERS = ['agent', 'manager', 'user'] as const
export const PIN_REASONS = ['task-start', 'reopen', 'checks-set', 'accepted', 'first-attempt'] as const
export const CHECK_VERDICTS = ['PASS', 'FAIL', 'INCONCLUSIVE'] as const
export const CHECK_FAILURE_REASONS = ['timeout', 'runner-fault', 'killed', 'not-runnable', 'pin_changed'] as const
export const PIN_CHANGES = ['modified', 'deleted', 'added'] as const

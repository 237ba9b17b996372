import { isNatural, isPositive, isString, oneOf } from '../records/shape'
import { CHECK_ID_PATTERN, MAX_CHECK_TIMEOUT_MS, OUTPUT_EXCERPT_MAX } from './checks'
import { MAX_PINNED_FILES } from './pins'
import type { RecoveryKind } from './records'
import {
  AGENT_CLAIMS, AGGREGATE_VERDICTS, CANDIDATE_SOURCES, CHECK_FAILURE_REASONS, CHECK_VERDICTS, CODE_PATTERN, DECISION_ACTIONS, DIGEST_PATTERN, ID_MAX,
  JOURNAL_STAGES, PATH_MAX, PIN_CHANGES, PIN_HASH_PATTERN, PIN_REASONS, REASON_MAX, REQUEST_TYPES, SANDBOXES, SHA256_PATTERN, SIGNAL_MAX,
  STRATEGY_PROPOSERS, TEXT_MAX,
} from './record-values'

/*
 * Today's shape of every recovery kind (the schemas in records.ts and checks.ts), checked without
 * throwing: the `today` fast paths of the recovery reader. Each accepts only payloads its schema reads
 * unchanged. Recovery kinds have no `canonical`, so the fast path returns a plain copy of the payload
 * where the schema path returns what schemastery made of it. Beyond what the schema refuses, these
 * refuse what it would change, and a little more so that this stays easy to check:
 * - an absent `timeoutMs` of a check (schemastery fills in its default);
 * - arrays with holes or extra keys (a copy keeps the keys, schemastery's `map` drops them);
 * - keys the schema does not name (schemastery keeps them, but makes a `__proto__` key the prototype),
 *   and objects that are not plain;
 * - `null` in an optional field, and `null`s in string arrays (schemastery keeps them).
 * Every such payload goes through the schema, which reads it or words the refusal.
 * `tests/recovery-fast-path.spec.ts` holds each predicate to its schema over mutations of every field.
 */

type Check = (value: unknown) => boolean

/** A field the schema does not require: absent, or `undefined` (both kept as they are), or passing. */
interface Optional {
  optional: Check
}

function maybe(check: Check): Optional {
  return { optional: check }
}

/**
 * `Schema.object(fields)` read unchanged: a plain object whose own enumerable keys (what the copy and
 * then schemastery see) are all in `fields` and pass their checks, with every required field present.
 */
function objectOf(fields: Record<string, Check | Optional>): Check {
  const known = new Map(Object.entries(fields).map(([key, field]) =>
    [key, typeof field === 'function' ? { check: field, required: true } : { check: field.optional, required: false }]))
  const required = [...known.values()].filter((field) => field.required).length
  return (value) => {
    if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return false
    const record = value as Record<string, unknown>
    let present = 0
    for (const key of Object.keys(record)) {
      const field = known.get(key)
      if (!field) return false
      const item = record[key]
      if (item === undefined ? field.required : !field.check(item)) return false
      if (field.required) present++
    }
    return present === required
  }
}

/** `Schema.array(item).max(max)` read unchanged: no holes, no keys besides the indexes. */
function arrayOf(item: Check, max = Infinity): Check {
  return (value) => {
    if (!Array.isArray(value) || value.length > max) return false
    for (let i = 0; i < value.length; i++) if (!item(value[i])) return false
    // Every index passed `item`, which refuses `undefined`: no holes, so any more keys are extra ones.
    return Object.keys(value).length === value.length
  }
}

/** `Schema.string()` with `.min`, `.max` (UTF-16 length, as `string.length`) and `.pattern`. */
function text(min: number, max: number, pattern?: RegExp): Check {
  return (value) => typeof value === 'string' && value.length >= min && value.length <= max
    && (!pattern || pattern.test(value))
}

function matches(pattern: RegExp): Check {
  return text(0, Infinity, pattern)
}

/** `Schema.natural().min(min).max(max)`: an integer in range (schemastery also takes -0; so does this). */
function natural(min: number, max = Infinity): Check {
  return (value) => isNatural(value) && value >= min && value <= max
}

// The patterns and bounds the schemas use (record-values.ts, checks.ts, pins.ts).
const isId = text(1, ID_MAX)
const isDigest = matches(DIGEST_PATTERN)
const isTime: Check = isNatural
const isText = text(0, TEXT_MAX)
const isCode = matches(CODE_PATTERN)
const isSha256 = matches(SHA256_PATTERN)
const isCheckId = matches(CHECK_ID_PATTERN)
const isPath = text(1, PATH_MAX)
const isBoolean: Check = (value) => typeof value === 'boolean'
/** `Schema.number()`: any number, NaN and the infinities included (the copy keeps them too). */
const isNumber: Check = (value) => typeof value === 'number'
const isStrings = arrayOf(isString)

const isCheckResult = objectOf({
  checkId: isCheckId,
  verdict: oneOf(CHECK_VERDICTS),
  exitCode: maybe(isNumber),
  signal: maybe(text(0, SIGNAL_MAX)),
  durationMs: isNatural,
  reason: maybe(oneOf(CHECK_FAILURE_REASONS)),
  signature: maybe(isSha256),
  outputExcerpt: maybe(text(0, OUTPUT_EXCERPT_MAX)),
  pinChanges: maybe(arrayOf(objectOf({ path: isPath, change: oneOf(PIN_CHANGES) }))),
})

const isCheckSpec = objectOf({
  id: isCheckId,
  argv: isStrings,
  // Required here: absent, schemastery fills in its default (600 000), which the copy would not.
  timeoutMs: natural(1, MAX_CHECK_TIMEOUT_MS),
  pin: maybe(isStrings),
})

export const isAttemptPayload = objectOf({
  attemptId: isId,
  taskId: isId,
  nodeId: maybe(isId),
  index: isPositive,
  rerunOf: maybe(isId),
  candidate: objectOf({
    digest: isDigest,
    source: oneOf(CANDIDATE_SOURCES),
    head: maybe(isDigest),
    tree: maybe(isDigest),
  }),
  parentCandidate: maybe(isDigest),
  configuredChecks: arrayOf(isCheckId),
  checks: arrayOf(isCheckResult),
  steps: maybe(isNatural),
  agentClaim: maybe(oneOf(AGENT_CLAIMS)),
  agentRequests: maybe(arrayOf(objectOf({ type: oneOf(REQUEST_TYPES), text: isText }))),
  strategy: isNatural,
  sandbox: maybe(oneOf(SANDBOXES)),
  recordedAt: isTime,
})

export const isDecisionPayload = objectOf({
  decisionId: isId,
  taskId: isId,
  attemptId: maybe(isId),
  verdict: oneOf(AGGREGATE_VERDICTS),
  delta: maybe(objectOf({
    newPass: isStrings,
    changedFailure: isBoolean,
    regression: isStrings,
    candidateChanged: isBoolean,
    progress: isBoolean,
  })),
  action: oneOf(DECISION_ACTIONS),
  stopReason: maybe(text(0, REASON_MAX)),
  reason: isCode,
  budgetsUsed: objectOf({ attempts: isNatural, totalSteps: isNatural, verifyReruns: isNatural, strategyChanges: isNatural }),
  budgets: maybe(objectOf({
    maxAttempts: isNatural,
    maxTotalSteps: isNatural,
    maxVerifyReruns: isNatural,
    stagnationIdenticalRounds: isNatural,
    stagnationUnchangedRounds: isNatural,
    maxStrategyChanges: isNatural,
  })),
  decidedAt: isTime,
})

export const isCandidatePayload = objectOf({
  journalId: isId,
  stage: oneOf(JOURNAL_STAGES),
  digest: isDigest,
  parent: maybe(isDigest),
  attemptId: maybe(isId),
  at: isTime,
})

export const isReceiptPayload = objectOf({
  journalId: isId,
  digest: isDigest,
  previous: maybe(isDigest),
  at: isTime,
})

export const isStrategyPayload = objectOf({
  taskId: isId,
  attemptId: maybe(isId),
  text: isText,
  proposedBy: oneOf(STRATEGY_PROPOSERS),
  at: isTime,
})

export const isChecksPayload = objectOf({
  taskId: isId,
  checks: arrayOf(isCheckSpec),
  setBy: (value) => value === 'user',
  at: isTime,
})

export const isPinsPayload = objectOf({
  taskId: isId,
  files: arrayOf(objectOf({ path: isPath, hash: matches(PIN_HASH_PATTERN) }), MAX_PINNED_FILES),
  digest: isSha256,
  reason: oneOf(PIN_REASONS),
  acceptanceCycle: maybe(isPositive),
  at: isTime,
})

export const isUnverifiedPayload = objectOf({
  taskId: isId,
  nodeId: maybe(isId),
  code: isCode,
  reason: text(0, REASON_MAX),
  message: isText,
  lostRounds: isNatural,
  at: isTime,
})

/**
 * The `today` check of each recovery kind. Every kind's today shape is its version-1 schema (2 only
 * added `unverified`, whose shape is the one it had at 1), so the reader asks these at both versions.
 */
export const RECOVERY_TODAY: Readonly<Record<RecoveryKind, Check>> = {
  attempt: never(isAttemptPayload),
  decision: never(isDecisionPayload),
  candidate: never(isCandidatePayload),
  receipt: never(isReceiptPayload),
  strategy: never(isStrategyPayload),
  checks: never(isChecksPayload),
  pins: never(isPinsPayload),
  unverified: never(isUnverifiedPayload),
}

/** A check that answers no where reading the value throws (a getter): these never throw. */
function never(check: Check): Check {
  return (value) => {
    try {
      return check(value)
    } catch {
      return false
    }
  }
}

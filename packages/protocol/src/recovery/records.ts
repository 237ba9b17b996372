import Schema from 'schemastery'
import { RecordEnvelope } from '../envelope'
import { defineReader, optional, writeVersionOf, type ReaderSpec } from '../records'
import { CheckResult, CheckResultSchema, CheckSpec, CheckSpecSchema, CHECK_ID_PATTERN } from './checks'
import { Budgets, BudgetsUsed } from './budgets'
import type { ProgressDelta } from './delta'
import type { AggregateVerdict } from './verdict'
import { MAX_PINNED_FILES, type PinBaselineReason, type PinnedFile } from './pins'
import { RECOVERY_TODAY } from './today'
import {
  AGENT_CLAIMS, AGGREGATE_VERDICTS, CANDIDATE_SOURCES, CODE_PATTERN, DECISION_ACTIONS, DIGEST_PATTERN, ID_MAX, JOURNAL_STAGES, PATH_MAX,
  PIN_HASH_PATTERN, PIN_REASONS, REASON_MAX, REQUEST_TYPES, SANDBOXES, SHA256_PATTERN, STRATEGY_PROPOSERS, TEXT_MAX,
} from './record-values'

export const RECOVERY_NAMESPACE = 'dsh-task-supervisor-recovery'
/**
 * The newest version of recovery records. 2 added the kind `unverified`; every other kind keeps
 * version 1's shape and is still written at 1 (`recoveryRecord`), so a host that reads only 1 keeps
 * reading every session where no background verification gave up, and reader admission refuses it
 * (instead of a poisoned projection) where one did.
 */
export const RECOVERY_SCHEMA_VERSION = 2

/** A workspace digest (sha256) or a git commit id (sha1 or sha256). */
const Digest = Schema.string().pattern(DIGEST_PATTERN)
const Id = Schema.string().min(1).max(ID_MAX)
const Time = Schema.natural()
const Text = Schema.string().max(TEXT_MAX)

/** The candidate an attempt was verified on, read by the controller (never the agent's word). */
export interface CandidateRef {
  digest: string
  source: 'workspace' | 'git'
  /**
   * git mode, a working tree that differs from HEAD: the commit it sits on. `digest` then names HEAD
   * and the tree together (see `gitCandidate`), so a dirty tree is never verified under HEAD's name.
   */
  head?: string
  /** git mode, a dirty working tree: the workspace stamp digest of the tree that was checked. */
  tree?: string
}

/** The sandbox a check ran in (`auto` resolves to one of these). */
export type SandboxKind = 'copy' | 'bwrap'

export type AgentClaim = 'done' | 'progress' | 'blocked'

/** Something an agent asked for. Recorded as evidence of the request; it never changes a decision. */
export interface AgentRequest {
  type: 'retry' | 'strategy'
  text: string
}

/**
 * One verification round. An agent attempt has `index` = its 1-based position in the task; a
 * verification rerun (no agent turn) names the attempt it re-checks in `rerunOf`, keeps its index and
 * candidate, and replaces its evidence.
 */
export interface AttemptPayload {
  attemptId: string
  taskId: string
  nodeId?: string
  index: number
  rerunOf?: string
  candidate: CandidateRef
  /** The candidate the attempt started from, as read by the controller before the agent turn. */
  parentCandidate?: string
  /** Ids of the checks configured when the attempt was verified; empty means validation is MISSING. */
  configuredChecks: string[]
  checks: CheckResult[]
  /** Agent steps spent producing this attempt; absent counts as one step. */
  steps?: number
  agentClaim?: AgentClaim
  agentRequests?: AgentRequest[]
  /** Index of the approach in use (0 first, +1 per authorized strategy change). */
  strategy: number
  /** The sandbox the checks actually ran in (absent on older records and when no check ran). */
  sandbox?: SandboxKind
  recordedAt: number
}

export type RecoveryAction = 'RETRY' | 'REVERIFY' | 'CHANGE_STRATEGY' | 'COMPLETE' | 'REJECT_CANDIDATE' | 'STOP'

/** A recorded controller decision (see `decide`). */
export interface DecisionPayload {
  decisionId: string
  taskId: string
  attemptId?: string
  verdict: AggregateVerdict
  delta?: ProgressDelta
  action: RecoveryAction
  stopReason?: string
  reason: string
  budgetsUsed: BudgetsUsed
  /** The resolved budgets the decision was made under (absent on older records). */
  budgets?: Budgets
  decidedAt: number
}

export type JournalStage = 'proposed' | 'verified' | 'committed' | 'rolled-back'

/**
 * A candidate journal entry. A promotion writes `proposed` (intent, before anything changes),
 * `verified`, `committed` (the authoritative candidate changes here) and then a receipt; an
 * interrupted promotion is finished or `rolled-back` by `reconcileJournal`.
 */
export interface CandidatePayload {
  journalId: string
  stage: JournalStage
  digest: string
  /** The authoritative candidate when the promotion was proposed. */
  parent?: string
  attemptId?: string
  at: number
}

/** Proof that the controller observed its own committed transition. One per committed journal. */
export interface ReceiptPayload {
  journalId: string
  digest: string
  previous?: string
  at: number
}

/** An alternative approach someone proposed. A recorded request: it authorizes nothing. */
export interface StrategyPayload {
  taskId: string
  attemptId?: string
  text: string
  proposedBy: 'agent' | 'manager' | 'user'
  at: number
}

/**
 * The checks a person set for one task (`/task checks`); they replace the configured checks for that
 * task from this record on. Only a user sets them: an agent cannot choose what verifies its own work.
 */
export interface ChecksPayload {
  taskId: string
  checks: CheckSpec[]
  setBy: 'user'
  at: number
}

/**
 * The controller's stamp of the files a task's checks trust (its pins), taken when the task becomes
 * active, when a person sets checks or accepts the pinned files as they are. Verdicts compare with it.
 */
export interface PinsPayload {
  taskId: string
  /** The pinned files as stamped, sorted by path. */
  files: PinnedFile[]
  /** `pinnedSetDigest(files)`. */
  digest: string
  reason: PinBaselineReason
  /** The task's acceptance cycle when stamped (absent means the first). */
  acceptanceCycle?: number
  at: number
}

/**
 * A background verification (a stage report's checks) that gave up: the workspace kept changing under
 * its copies, so the stage was not verified. Evidence for a person; it changes no decision or budget.
 */
export interface UnverifiedPayload {
  taskId: string
  nodeId?: string
  /** The refusal's code and reason (`ARTIFACT_CHANGED`, `workspace-unsettled`). */
  code: string
  reason: string
  message: string
  lostRounds: number
  at: number
}

export interface RecoveryPayloads {
  unverified: UnverifiedPayload
  attempt: AttemptPayload
  decision: DecisionPayload
  candidate: CandidatePayload
  receipt: ReceiptPayload
  strategy: StrategyPayload
  checks: ChecksPayload
  pins: PinsPayload
}

export type RecoveryKind = keyof RecoveryPayloads

const AttemptSchema = Schema.object({
  attemptId: Id.required(),
  taskId: Id.required(),
  nodeId: Id,
  index: Schema.natural().min(1).required(),
  rerunOf: Id,
  candidate: Schema.object({
    digest: Digest.required(),
    source: Schema.union([...CANDIDATE_SOURCES]).required(),
    head: Digest,
    tree: Digest,
  }).required(),
  parentCandidate: Digest,
  configuredChecks: Schema.array(Schema.string().pattern(CHECK_ID_PATTERN)).required(),
  checks: Schema.array(CheckResultSchema).required(),
  steps: Schema.natural(),
  agentClaim: Schema.union([...AGENT_CLAIMS]),
  agentRequests: optional(Schema.array(Schema.object({
    type: Schema.union([...REQUEST_TYPES]).required(),
    text: Text.required(),
  }))),
  strategy: Schema.natural().required(),
  sandbox: Schema.union([...SANDBOXES]),
  recordedAt: Time.required(),
})

const DeltaSchema = Schema.object({
  newPass: Schema.array(Schema.string()).required(),
  changedFailure: Schema.boolean().required(),
  regression: Schema.array(Schema.string()).required(),
  candidateChanged: Schema.boolean().required(),
  progress: Schema.boolean().required(),
})

const BudgetsUsedSchema = Schema.object({
  attempts: Schema.natural().required(),
  totalSteps: Schema.natural().required(),
  verifyReruns: Schema.natural().required(),
  strategyChanges: Schema.natural().required(),
})

/** Every key required: a recorded budget is what was used, never a default filled in on reading. */
const RecordedBudgetsSchema = Schema.object({
  maxAttempts: Schema.natural().required(),
  maxTotalSteps: Schema.natural().required(),
  maxVerifyReruns: Schema.natural().required(),
  stagnationIdenticalRounds: Schema.natural().required(),
  stagnationUnchangedRounds: Schema.natural().required(),
  maxStrategyChanges: Schema.natural().required(),
})

const DecisionSchema = Schema.object({
  decisionId: Id.required(),
  taskId: Id.required(),
  attemptId: Id,
  verdict: Schema.union([...AGGREGATE_VERDICTS]).required(),
  delta: optional(DeltaSchema),
  action: Schema.union([...DECISION_ACTIONS]).required(),
  stopReason: Schema.string().max(REASON_MAX),
  reason: Schema.string().pattern(CODE_PATTERN).required(),
  budgetsUsed: BudgetsUsedSchema.required(),
  budgets: optional(RecordedBudgetsSchema),
  decidedAt: Time.required(),
})

const CandidateSchema = Schema.object({
  journalId: Id.required(),
  stage: Schema.union([...JOURNAL_STAGES]).required(),
  digest: Digest.required(),
  parent: Digest,
  attemptId: Id,
  at: Time.required(),
})

const ReceiptSchema = Schema.object({
  journalId: Id.required(),
  digest: Digest.required(),
  previous: Digest,
  at: Time.required(),
})

const StrategySchema = Schema.object({
  taskId: Id.required(),
  attemptId: Id,
  text: Text.required(),
  proposedBy: Schema.union([...STRATEGY_PROPOSERS]).required(),
  at: Time.required(),
})

const ChecksSchema = Schema.object({
  taskId: Id.required(),
  checks: Schema.array(CheckSpecSchema).required(),
  setBy: Schema.const('user' as const).required(),
  at: Time.required(),
})

const PinsSchema = Schema.object({
  taskId: Id.required(),
  files: Schema.array(Schema.object({
    path: Schema.string().min(1).max(PATH_MAX).required(),
    hash: Schema.string().pattern(PIN_HASH_PATTERN).required(),
  })).max(MAX_PINNED_FILES).required(),
  digest: Schema.string().pattern(SHA256_PATTERN).required(),
  reason: Schema.union([...PIN_REASONS]).required(),
  acceptanceCycle: Schema.natural().min(1),
  at: Time.required(),
})

const UnverifiedSchema = Schema.object({
  taskId: Id.required(),
  nodeId: Id,
  code: Schema.string().pattern(CODE_PATTERN).required(),
  reason: Schema.string().max(REASON_MAX).required(),
  message: Text.required(),
  lostRounds: Schema.natural().required(),
  at: Time.required(),
})

/** How each kind of recovery record looks at each version (see `RECOVERY_SCHEMA_VERSION`). */
const recoveryReaderSpec: ReaderSpec = {
  namespace: RECOVERY_NAMESPACE,
  writes: RECOVERY_SCHEMA_VERSION,
  minVersion: 1,
  kinds: {
    // `today`: every kind's shape is its schema 1's, at both versions (see today.ts).
    attempt: { schemas: { 1: AttemptSchema }, today: RECOVERY_TODAY.attempt },
    decision: { schemas: { 1: DecisionSchema }, today: RECOVERY_TODAY.decision },
    candidate: { schemas: { 1: CandidateSchema }, today: RECOVERY_TODAY.candidate },
    receipt: { schemas: { 1: ReceiptSchema }, today: RECOVERY_TODAY.receipt },
    strategy: { schemas: { 1: StrategySchema }, today: RECOVERY_TODAY.strategy },
    checks: { schemas: { 1: ChecksSchema }, today: RECOVERY_TODAY.checks },
    pins: { schemas: { 1: PinsSchema }, today: RECOVERY_TODAY.pins },
    // Written at 2 so that readers of 1 are refused it; read at 1 too, as main wrote it for a while
    // before that was decided (never in a release).
    unverified: { schemas: { 1: UnverifiedSchema }, writesAt: 2, today: RECOVERY_TODAY.unverified },
  },
}

/** Reads `dsh-task-supervisor-recovery` records (versions 1–2) into today's shape. */
export const recoveryReader = defineReader(recoveryReaderSpec)

/** The version each kind is written at: the lowest one in today's shape (1, `unverified` 2). */
const RECOVERY_WRITE_VERSIONS = Object.fromEntries(Object.keys(recoveryReaderSpec.kinds)
  .map((kind) => [kind, writeVersionOf(recoveryReaderSpec, kind)])) as Record<RecoveryKind, number>

/** The envelope to append for a recovery record (the data of an `extension/record` event). */
export function recoveryRecord<K extends RecoveryKind>(kind: K, recordId: string, payload: RecoveryPayloads[K]): RecordEnvelope<RecoveryPayloads[K]> {
  return { namespace: RECOVERY_NAMESPACE, schemaVersion: RECOVERY_WRITE_VERSIONS[kind], kind, recordId, payload }
}

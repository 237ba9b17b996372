import { absentOr, isArrayOf, isNatural, isNonEmpty, isObject, isPositive, isString, oneOf } from '../records/shape'
import { NODE_ID_PATTERN } from './schemas'
import { NODE_RUN_STATUSES, PAUSE_REASONS, RESUMABLE_PHASES, REVIEW_KINDS, REVIEW_VERDICTS, TASK_PHASES, type Task } from './types'

/*
 * Today's (schema 11) `state` payload, checked without throwing: the fast path of the task reader.
 * It mirrors `taskStateSchema(11)` field by field and accepts only what that schema accepts, so a
 * payload it accepts is read exactly as the schema would read it; everything else (older versions,
 * `null`s, invalid data) goes through the schema, which reads it or words the refusal.
 * `tests/records-fast-path.spec.ts` holds the two to each other over fixtures and mutations.
 */

const isPhase = oneOf(TASK_PHASES)
const isRunStatus = oneOf(NODE_RUN_STATUSES)
const isPauseReason = oneOf(PAUSE_REASONS)
const isResumePhase = oneOf(RESUMABLE_PHASES)
const isReviewKind = oneOf(REVIEW_KINDS)
const isVerdict = oneOf(REVIEW_VERDICTS)

function isNodeId(value: unknown): value is string {
  return typeof value === 'string' && NODE_ID_PATTERN.test(value)
}

function isStrings(value: unknown): value is string[] {
  return isArrayOf(value, isString)
}

function isNodeIds(value: unknown): value is string[] {
  return isArrayOf(value, isNodeId)
}

function isReviewOutcome(value: unknown): boolean {
  return isObject(value) && isNonEmpty(value.jobId) && isVerdict(value.verdict) && isStrings(value.findings)
}

function isCompletionReview(value: unknown): boolean {
  return isReviewOutcome(value)
    && absentOr((value as Record<string, unknown>).evidenceSeqs, (seqs) => isArrayOf(seqs, isNatural))
    && absentOr((value as Record<string, unknown>).cutoffSeq, isNatural)
}

function isPlanNode(value: unknown): boolean {
  return isObject(value) && isNodeId(value.id) && isString(value.title) && absentOr(value.dependsOn, isNodeIds)
}

function isPlan(value: unknown): boolean {
  return isObject(value) && isStrings(value.acceptanceCriteria) && isArrayOf(value.nodes, isPlanNode)
}

function isPriorAcceptance(value: unknown): boolean {
  return isObject(value) && isPositive(value.attempt) && absentOr(value.jobId, isNonEmpty)
}

function isRun(value: unknown): boolean {
  return isObject(value) && isPositive(value.attempt) && isRunStatus(value.status)
    && absentOr(value.evidenceAfterSeq, isNatural)
    && absentOr(value.review, isReviewOutcome)
    && absentOr(value.reworkReason, isString)
    && absentOr(value.priorAcceptance, isPriorAcceptance)
}

/** `Schema.dict(run, nodeId)`: schemastery walks the keys with `for … in`, so this does too. */
function isRuns(value: unknown): boolean {
  if (!isObject(value)) return false
  for (const key in value) {
    if (!NODE_ID_PATTERN.test(key) || !isRun(value[key])) return false
  }
  return true
}

function isPendingReview(value: unknown): boolean {
  return isObject(value) && isReviewKind(value.kind) && isNonEmpty(value.jobId)
    && absentOr(value.nodeId, isNodeId) && isPositive(value.forRevision)
}

function isRepairHistoryEntry(value: unknown): boolean {
  return isObject(value) && isNonEmpty(value.proposalId) && isString(value.title) && isString(value.reason)
    && isNodeIds(value.rootNodeIds) && isNodeIds(value.affectedNodeIds)
    && isPositive(value.previousCycle) && isRuns(value.previousRuns)
    && absentOr(value.previousCompletionReview, isCompletionReview)
    && absentOr(value.completedAt, isNatural)
    && isNatural(value.confirmedAt) && isNatural(value.confirmationSeq)
}

/** Whether `payload` is a schema-11 task exactly as `taskStateSchema(11)` would accept it. */
export function isTaskStateV11(payload: unknown): payload is Task {
  if (!isObject(payload)) return false
  const task = payload
  return isNonEmpty(task.id) && isPositive(task.revision) && isString(task.objective)
    && isPhase(task.phase) && typeof task.enabled === 'boolean'
    && absentOr(task.plan, isPlan)
    && isRuns(task.nodeRuns)
    && absentOr(task.pendingReview, isPendingReview)
    && absentOr(task.completionReview, isCompletionReview)
    && absentOr(task.planFeedback, isStrings)
    && absentOr(task.pauseReason, isPauseReason)
    && absentOr(task.resumePhase, isResumePhase)
    && absentOr(task.acceptanceCycle, isPositive)
    && absentOr(task.completedAt, isNatural)
    && absentOr(task.reopenedFromProposalId, isNonEmpty)
    && absentOr(task.repairHistory, (history) => isArrayOf(history, isRepairHistoryEntry))
}

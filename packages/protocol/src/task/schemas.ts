import { TASK_NAMESPACE, TASK_STATE_KIND } from '../record-names'
import Schema from 'schemastery'
import { optional } from '../records/reader'

/*
 * Payload schemas of `dsh-task-supervisor` `state` records, versions 1–11. Each version is the
 * previous one plus what it added, so one factory describes them all:
 *
 *   v1  linear plans (nodes without `dependsOn`), `nodeRuns` as an array of `{nodeId, attempt, status}`,
 *       no `reviewing` phase or run status.
 *   v2  `reviewing` phase and run status, `awaiting-user` runs, `pendingReview`, `completionReview`
 *       (`{jobId, verdict, findings}`).
 *   v3  `planFeedback`.
 *   v4  plan nodes may carry `dependsOn` (DAG plans).
 *   v5  `nodeRuns` becomes an object keyed by node id (the array is upgraded, see reader.ts).
 *   v6  runs gain `evidenceAfterSeq`, `review`, `reworkReason`, `priorAcceptance`.
 *   v7  `pauseReason` (`user | decision | review-fault | restart`) and `resumePhase`.
 *   v8  `completionReview` gains `evidenceSeqs` and `cutoffSeq`.
 *   v9  pause reason `recovery`, review kind `progress`.
 *   v10 `acceptanceCycle`, `completedAt`, `reopenedFromProposalId`, `repairHistory`.
 *   v11 pause reasons `budget` (a recovery budget or the token budget stopped the task),
 *       `model-context` (the turn's own input cannot fit the model's context) and `loop` (the agent
 *       repeated a call after TOOL_REPEATED).
 *
 * Every field a version lacks is simply not in its schema; upgrades never add it.
 */

export { TASK_NAMESPACE, TASK_STATE_KIND }
export const TASK_SCHEMA_VERSION = 11
export const TASK_MIN_SCHEMA_VERSION = 1

/** Node ids are short identifiers; they key `nodeRuns`, so object-prototype names cannot occur. */
export const NODE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/

const nonEmpty = () => Schema.string().min(1)
const seq = () => Schema.natural()
const positive = () => Schema.natural().min(1)
const nodeId = () => Schema.string().pattern(NODE_ID_PATTERN)
const strings = () => Schema.array(Schema.string())

function phases(v: number) {
  const all = ['planning', 'awaiting-approval', 'active', 'reviewing', 'paused', 'complete', 'cleared']
  return Schema.union(v >= 2 ? all : all.filter((p) => p !== 'reviewing'))
}

function runStatuses(v: number) {
  return Schema.union(v >= 2
    ? ['pending', 'running', 'reviewing', 'passed', 'needs-revision', 'awaiting-user']
    : ['pending', 'running', 'passed', 'needs-revision'])
}

const verdict = () => Schema.union(['pass', 'revise', 'needs-user'])

const reviewOutcome = () => Schema.object({
  jobId: nonEmpty().required(),
  verdict: verdict().required(),
  findings: strings().required(),
})

function completionReview(v: number) {
  return Schema.object({
    jobId: nonEmpty().required(),
    verdict: verdict().required(),
    findings: strings().required(),
    ...(v >= 8 ? { evidenceSeqs: optional(Schema.array(seq())), cutoffSeq: seq() } : {}),
  })
}

function planNode(v: number) {
  return Schema.object({
    id: nodeId().required(),
    title: Schema.string().required(),
    ...(v >= 4 ? { dependsOn: optional(Schema.array(nodeId())) } : {}),
  })
}

function plan(v: number) {
  return Schema.object({
    acceptanceCriteria: strings().required(),
    nodes: Schema.array(planNode(v)).required(),
  })
}

function runFields(v: number) {
  return {
    attempt: positive().required(),
    status: runStatuses(v).required(),
    ...(v >= 6 ? {
      evidenceAfterSeq: seq(),
      review: optional(reviewOutcome()),
      reworkReason: Schema.string(),
      priorAcceptance: optional(Schema.object({ attempt: positive().required(), jobId: nonEmpty() })),
    } : {}),
  }
}

function nodeRuns(v: number) {
  if (v < 5) return Schema.array(Schema.object({ nodeId: nodeId().required(), ...runFields(v) }))
  return Schema.dict(Schema.object(runFields(v)), nodeId())
}

function pendingReview(v: number) {
  return Schema.object({
    kind: Schema.union(v >= 9 ? ['plan', 'stage', 'completion', 'progress'] : ['plan', 'stage', 'completion']).required(),
    jobId: nonEmpty().required(),
    nodeId: nodeId(),
    forRevision: positive().required(),
  })
}

function repairHistoryEntry() {
  return Schema.object({
    proposalId: nonEmpty().required(),
    title: Schema.string().required(),
    reason: Schema.string().required(),
    rootNodeIds: Schema.array(nodeId()).required(),
    affectedNodeIds: Schema.array(nodeId()).required(),
    previousCycle: positive().required(),
    previousRuns: Schema.dict(Schema.object(runFields(10)), nodeId()).required(),
    previousCompletionReview: optional(completionReview(10)),
    completedAt: seq(),
    confirmedAt: seq().required(),
    confirmationSeq: seq().required(),
  })
}

/** The payload schema of a `state` record written at version `v` (1–11). */
export function taskStateSchema(v: number): Schema<any, any> {
  const pauseReasons = ['user', 'decision', 'review-fault', 'restart', ...(v >= 9 ? ['recovery'] : []), ...(v >= 11 ? ['budget', 'model-context', 'loop'] : [])]
  return Schema.object({
    id: nonEmpty().required(),
    revision: positive().required(),
    objective: Schema.string().required(),
    phase: phases(v).required(),
    enabled: Schema.boolean().required(),
    nodeRuns: nodeRuns(v).required(),
    // Optional fields in the order the canonical form writes them (canonical.ts derives it from here).
    ...(v >= 7 ? {
      pauseReason: Schema.union(pauseReasons),
      resumePhase: Schema.union(['planning', 'awaiting-approval', 'active', 'reviewing']),
    } : {}),
    plan: optional(plan(v)),
    ...(v >= 3 ? { planFeedback: optional(strings()) } : {}),
    ...(v >= 2 ? { pendingReview: optional(pendingReview(v)), completionReview: optional(completionReview(v)) } : {}),
    ...(v >= 10 ? {
      acceptanceCycle: positive(),
      completedAt: seq(),
      reopenedFromProposalId: nonEmpty(),
      repairHistory: optional(Schema.array(repairHistoryEntry())),
    } : {}),
  })
}

/** Today's shapes of a task's parts, for the canonical form (canonical.ts). */
export const TODAY_SCHEMAS = {
  task: taskStateSchema(TASK_SCHEMA_VERSION),
  plan: plan(TASK_SCHEMA_VERSION),
  run: Schema.object(runFields(TASK_SCHEMA_VERSION)),
  review: reviewOutcome(),
  completionReview: completionReview(TASK_SCHEMA_VERSION),
}

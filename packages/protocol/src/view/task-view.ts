import { dependencyMap } from '../task/dag'
import type { ReviewJob } from '../task/review-job'
import type { TaskHeadline } from '../task/status'
import {
  effectiveCycle, type CompletionReview, type NodeRun, type NodeRunStatus, type PendingReview,
  type PriorAcceptance, type ReviewKind, type ReviewVerdict, type Task,
} from '../task/types'
import { nodeStatusLabel, pauseReasonLabel, PHASE_LABELS } from './labels'
import { layoutDag, type DagLayout } from './dag-layout'

/*
 * The read model of one task (current or historical) that both renderers show — the console's task
 * view, DAG and history, and the DSH panel: the labels come with it, so a wording changes here once. Pure: built from the supervisor projection alone, fields absent when the records lack
 * them (an absent acceptance cycle is shown as the implicit first cycle, flagged `cycleRecorded: false`).
 */

export interface NodeView {
  id: string
  title: string
  dependsOn: string[]
  /** Absent before the plan is approved. */
  attempt?: number
  status?: NodeRunStatus
  /** The status in words ("not started" before the plan is approved). */
  statusLabel: string
  reworkReason?: string
  priorAcceptance?: PriorAcceptance
  review?: { jobId: string, verdict: ReviewVerdict, findings: string[] }
}

export interface ReviewView {
  jobId: string
  kind: ReviewKind
  nodeId?: string
  status: ReviewJob['status']
  verdict?: ReviewVerdict
  findings: string[]
  evidenceSeqs: number[]
  reviewerSessionId: string
  model: string
  cutoffSeq: number
  taskRevision: number
}

export interface RepairCycleView {
  /** The acceptance cycle this repair ended. */
  cycle: number
  proposalId: string
  title: string
  reason: string
  rootNodeIds: string[]
  affectedNodeIds: string[]
  completedAt?: number
  confirmedAt: number
  confirmationSeq: number
  completionReview?: CompletionReview
  /** The runs accepted in that cycle, in plan order. */
  runs: (NodeRun & { id: string })[]
}

export interface TaskDetailView extends TaskHeadline {
  /** Whether the record carries the cycle (false: implicit first cycle). */
  cycleRecorded: boolean
  /** The phase as a label ("Awaiting approval"). */
  phaseLabel: string
  /** Why it is paused and what to do next, in words (paused tasks only). */
  pauseReasonLabel?: string
  acceptanceCriteria: string[]
  planFeedback?: string[]
  nodes: NodeView[]
  layout?: DagLayout
  pendingReview?: PendingReview
  completionReview?: CompletionReview
  /** Review jobs of this task still in the projection's window, oldest first. */
  reviews: ReviewView[]
  repairHistory: RepairCycleView[]
  /** Whether this is the session's current task (false: history). */
  isCurrent: boolean
}

function nodeRunView(run: NodeRun | undefined): Partial<NodeView> {
  if (!run) return {}
  return {
    attempt: run.attempt,
    status: run.status,
    ...(run.reworkReason ? { reworkReason: run.reworkReason } : {}),
    ...(run.priorAcceptance ? { priorAcceptance: { ...run.priorAcceptance } } : {}),
    ...(run.review ? { review: { jobId: run.review.jobId, verdict: run.review.verdict, findings: [...run.review.findings] } } : {}),
  }
}

export function reviewView(job: ReviewJob): ReviewView {
  return {
    jobId: job.jobId,
    kind: job.kind,
    ...(job.nodeId ? { nodeId: job.nodeId } : {}),
    status: job.status,
    ...(job.verdict ? { verdict: job.verdict } : {}),
    findings: [...(job.findings ?? [])],
    evidenceSeqs: [...job.evidenceSeqs],
    reviewerSessionId: job.reviewerSessionId,
    model: job.model,
    cutoffSeq: job.cutoffSeq,
    taskRevision: job.taskRevision,
  }
}

export function taskDetailView(task: Task, reviews: readonly ReviewJob[], isCurrent: boolean): TaskDetailView {
  const deps = task.plan ? dependencyMap(task.plan) : new Map<string, string[]>()
  const order = task.plan?.nodes.map((node) => node.id) ?? []
  const view: TaskDetailView = {
    id: task.id,
    revision: task.revision,
    objective: task.objective,
    phase: task.phase,
    ...(task.pauseReason ? { pauseReason: task.pauseReason } : {}),
    phaseLabel: PHASE_LABELS[task.phase] ?? task.phase,
    ...(task.phase === 'paused' && task.pauseReason ? { pauseReasonLabel: pauseReasonLabel(task.pauseReason) } : {}),
    enabled: task.enabled,
    acceptanceCycle: effectiveCycle(task),
    cycleRecorded: task.acceptanceCycle !== undefined,
    ...(task.completedAt !== undefined ? { completedAt: task.completedAt } : {}),
    ...(task.reopenedFromProposalId ? { reopenedFromProposalId: task.reopenedFromProposalId } : {}),
    acceptanceCriteria: [...(task.plan?.acceptanceCriteria ?? [])],
    ...(task.planFeedback ? { planFeedback: [...task.planFeedback] } : {}),
    nodes: (task.plan?.nodes ?? []).map((node) => ({
      id: node.id, title: node.title, dependsOn: deps.get(node.id) ?? [], ...nodeRunView(task.nodeRuns[node.id]),
      statusLabel: nodeStatusLabel(task.nodeRuns[node.id]?.status),
    })),
    ...(task.plan ? { layout: layoutDag(task.plan) } : {}),
    ...(task.pendingReview ? { pendingReview: { ...task.pendingReview } } : {}),
    ...(task.completionReview ? { completionReview: structuredClone(task.completionReview) } : {}),
    reviews: reviews.filter((job) => job.taskId === task.id).map(reviewView),
    repairHistory: (task.repairHistory ?? []).map((entry) => ({
      cycle: entry.previousCycle,
      proposalId: entry.proposalId,
      title: entry.title,
      reason: entry.reason,
      rootNodeIds: [...entry.rootNodeIds],
      affectedNodeIds: [...entry.affectedNodeIds],
      ...(entry.completedAt !== undefined ? { completedAt: entry.completedAt } : {}),
      confirmedAt: entry.confirmedAt,
      confirmationSeq: entry.confirmationSeq,
      ...(entry.previousCompletionReview ? { completionReview: structuredClone(entry.previousCompletionReview) } : {}),
      runs: [...order.filter((id) => entry.previousRuns[id]), ...Object.keys(entry.previousRuns).filter((id) => !order.includes(id))]
        .map((id) => ({ id, ...structuredClone(entry.previousRuns[id]) })),
    })),
    isCurrent,
  }
  return view
}

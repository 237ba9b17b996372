import type {
  CompletionReview, NodeRun, PendingReview, PlanNode, RepairHistoryEntry, ReviewOutcome, Task, TaskPlan,
} from './types'

/*
 * The canonical form of a task: fresh plain objects holding only known fields, optional fields only
 * when defined. Writers persist it and readers return it, so that two equal tasks are deep-equal
 * (`isDeepStrictEqual`) no matter which path produced them, and unknown keys never leak through.
 */

function put<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | undefined) {
  if (value !== undefined) target[key] = value
}

export function canonicalPlan(plan: TaskPlan): TaskPlan {
  return {
    acceptanceCriteria: [...plan.acceptanceCriteria],
    nodes: plan.nodes.map((node) => {
      const out: PlanNode = { id: node.id, title: node.title }
      put(out, 'dependsOn', node.dependsOn && [...node.dependsOn])
      return out
    }),
  }
}

export function canonicalReview(review: ReviewOutcome): ReviewOutcome {
  return { jobId: review.jobId, verdict: review.verdict, findings: [...review.findings] }
}

export function canonicalCompletionReview(review: CompletionReview): CompletionReview {
  const out: CompletionReview = canonicalReview(review)
  put(out, 'evidenceSeqs', review.evidenceSeqs && [...review.evidenceSeqs])
  put(out, 'cutoffSeq', review.cutoffSeq)
  return out
}

export function canonicalRun(run: NodeRun): NodeRun {
  const out: NodeRun = { attempt: run.attempt, status: run.status }
  put(out, 'evidenceAfterSeq', run.evidenceAfterSeq)
  put(out, 'review', run.review && canonicalReview(run.review))
  put(out, 'reworkReason', run.reworkReason)
  if (run.priorAcceptance) {
    const prior: NodeRun['priorAcceptance'] = { attempt: run.priorAcceptance.attempt }
    put(prior!, 'jobId', run.priorAcceptance.jobId)
    out.priorAcceptance = prior
  }
  return out
}

export function canonicalRuns(runs: Record<string, NodeRun>): Record<string, NodeRun> {
  const out: Record<string, NodeRun> = {}
  for (const [id, run] of Object.entries(runs)) out[id] = canonicalRun(run)
  return out
}

function canonicalPending(pending: PendingReview): PendingReview {
  const out: PendingReview = { kind: pending.kind, jobId: pending.jobId, forRevision: pending.forRevision }
  put(out, 'nodeId', pending.nodeId)
  return out
}

function canonicalHistoryEntry(entry: RepairHistoryEntry): RepairHistoryEntry {
  const out: RepairHistoryEntry = {
    proposalId: entry.proposalId,
    title: entry.title,
    reason: entry.reason,
    rootNodeIds: [...entry.rootNodeIds],
    affectedNodeIds: [...entry.affectedNodeIds],
    previousCycle: entry.previousCycle,
    previousRuns: canonicalRuns(entry.previousRuns),
    confirmedAt: entry.confirmedAt,
    confirmationSeq: entry.confirmationSeq,
  }
  put(out, 'previousCompletionReview', entry.previousCompletionReview && canonicalCompletionReview(entry.previousCompletionReview))
  put(out, 'completedAt', entry.completedAt)
  return out
}

/** A fresh copy of `task` with known fields only; optional fields only when defined. */
export function canonicalTask(task: Task): Task {
  const out: Task = {
    id: task.id,
    revision: task.revision,
    objective: task.objective,
    phase: task.phase,
    enabled: task.enabled,
    nodeRuns: canonicalRuns(task.nodeRuns),
  }
  put(out, 'pauseReason', task.pauseReason)
  put(out, 'resumePhase', task.resumePhase)
  put(out, 'plan', task.plan && canonicalPlan(task.plan))
  put(out, 'planFeedback', task.planFeedback && [...task.planFeedback])
  put(out, 'pendingReview', task.pendingReview && canonicalPending(task.pendingReview))
  put(out, 'completionReview', task.completionReview && canonicalCompletionReview(task.completionReview))
  put(out, 'acceptanceCycle', task.acceptanceCycle)
  put(out, 'completedAt', task.completedAt)
  put(out, 'reopenedFromProposalId', task.reopenedFromProposalId)
  put(out, 'repairHistory', task.repairHistory && task.repairHistory.map(canonicalHistoryEntry))
  return out
}

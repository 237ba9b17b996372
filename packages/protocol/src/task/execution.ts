import { TaskwardError } from '../errors'
import { canonicalRun } from './canonical'
import { affectedNodes, dependencyMap, readyNodes } from './dag'
import { advance, requireExecuting, requirePendingReview, requireText } from './guards'
import type { CompletionReview, NodeRun, ReviewOutcome, Task, TransitionAt } from './types'

/*
 * Execution transitions of an approved task: start a node, report its stage, apply the stage review,
 * rework, request final acceptance and apply the completion review. All refuse on a complete task
 * (`TASK_COMPLETED`), a task not executing (`TASK_NOT_EXECUTING`) and disabled supervision
 * (`SUPERVISOR_DISABLED`).
 */

/** The completion reviewer's verdict with what it read. */
export interface CompletionReviewResult extends ReviewOutcome {
  evidenceSeqs: number[]
  cutoffSeq: number
}

function runOf(task: Task, nodeId: string): NodeRun {
  const run = task.nodeRuns[nodeId]
  if (!task.plan || !run) {
    throw new TaskwardError('TASK_INVALID', `Task ${task.id} has no node "${nodeId}". Read task_status for the node ids.`, { nodeId })
  }
  return run
}

function withRun(task: Task, nodeId: string, run: NodeRun): Record<string, NodeRun> {
  return { ...task.nodeRuns, [nodeId]: run }
}

/** Start a ready node (task_start_node): pending or needs-revision with every dependency passed → running. */
export function startNode(task: Task | undefined, input: { nodeId: string }, at: TransitionAt): Task {
  const live = requireExecuting(task)
  const run = runOf(live, input.nodeId)
  if (!readyNodes(live).includes(input.nodeId)) {
    const waiting = dependencyMap(live.plan!).get(input.nodeId)!.filter((dep) => live.nodeRuns[dep]?.status !== 'passed')
    const why = run.status !== 'pending' && run.status !== 'needs-revision'
      ? `it is ${run.status}`
      : `its dependencies ${waiting.map((d) => `"${d}"`).join(', ')} have not passed`
    throw new TaskwardError('TASK_NOT_EXECUTING',
      `Node "${input.nodeId}" cannot start: ${why}. Ready nodes: ${readyNodes(live).join(', ') || 'none'}.`,
      { nodeId: input.nodeId, status: run.status, waitingFor: waiting })
  }
  return advance(live, { nodeRuns: withRun(live, input.nodeId, { ...run, status: 'running' }) })
}

/** Report a running node's stage for review (task_report_stage): node and task → reviewing. */
export function reportStage(task: Task | undefined, input: { nodeId: string, jobId: string }, at: TransitionAt): Task {
  const live = requireExecuting(task)
  const run = runOf(live, input.nodeId)
  if (run.status !== 'running') {
    throw new TaskwardError('TASK_NOT_EXECUTING',
      `Node "${input.nodeId}" is ${run.status}, not running; start it with task_start_node before reporting its stage.`,
      { nodeId: input.nodeId, status: run.status })
  }
  const jobId = requireText(input.jobId, 'review job id', 200)
  return advance(live, {
    phase: 'reviewing',
    nodeRuns: withRun(live, input.nodeId, { ...run, status: 'reviewing' }),
    pendingReview: { kind: 'stage', jobId, nodeId: input.nodeId, forRevision: live.revision + 1 },
  })
}

/**
 * Apply a stage review: `pass` → node passed; `revise` → needs-revision; `needs-user` → awaiting-user
 * and the task pauses for the user's decision (resume returns to active).
 */
export function applyStageReview(task: Task | undefined, review: ReviewOutcome, at: TransitionAt): Task {
  const live = requirePendingReview(task, 'stage', review.jobId)
  const nodeId = live.pendingReview!.nodeId!
  const outcome: ReviewOutcome = { jobId: review.jobId, verdict: review.verdict, findings: [...review.findings] }
  const status = review.verdict === 'pass' ? 'passed' : review.verdict === 'revise' ? 'needs-revision' : 'awaiting-user'
  const nodeRuns = withRun(live, nodeId, { ...runOf(live, nodeId), status, review: outcome })
  if (review.verdict === 'needs-user') {
    return advance(live, { phase: 'paused', pauseReason: 'decision', resumePhase: 'active', pendingReview: undefined, nodeRuns })
  }
  return advance(live, { phase: 'active', pendingReview: undefined, nodeRuns })
}

/**
 * Rework a node (task_rework_node): the node and all its descendants get a new pending attempt
 * (shared descendants once) with `reason`; a passed run's acceptance is kept as `priorAcceptance`.
 * Evidence for the new attempts must come after `at.seq`.
 */
export function reworkNode(task: Task | undefined, input: { nodeId: string, reason: string }, at: TransitionAt): Task {
  const live = requireExecuting(task)
  const run = runOf(live, input.nodeId)
  if (run.status === 'pending') {
    throw new TaskwardError('TASK_INVALID',
      `Node "${input.nodeId}" has not started; there is nothing to rework. Start it with task_start_node.`, { nodeId: input.nodeId })
  }
  const reason = requireText(input.reason, 'rework reason')
  const nodeRuns = { ...live.nodeRuns }
  for (const id of affectedNodes(live.plan!, [input.nodeId])) {
    const old = live.nodeRuns[id]
    const priorAcceptance = old.status === 'passed'
      ? { attempt: old.attempt, ...(old.review ? { jobId: old.review.jobId } : {}) }
      : old.priorAcceptance
    nodeRuns[id] = canonicalRun({
      attempt: old.attempt + 1, status: 'pending', evidenceAfterSeq: at.seq, reworkReason: reason, priorAcceptance,
    })
  }
  return advance(live, { nodeRuns })
}

/** Ask for final acceptance (task_request_completion): every node passed → reviewing (completion). */
export function requestCompletion(task: Task | undefined, input: { jobId: string }, at: TransitionAt): Task {
  const live = requireExecuting(task)
  const open = live.plan ? live.plan.nodes.map((n) => n.id).filter((id) => live.nodeRuns[id]?.status !== 'passed') : []
  if (!live.plan || open.length) {
    throw new TaskwardError('TASK_NOT_COMPLETE',
      `Nodes ${open.map((id) => `"${id}"`).join(', ')} have not passed review; finish them before requesting completion.`,
      { open })
  }
  const jobId = requireText(input.jobId, 'review job id', 200)
  return advance(live, { phase: 'reviewing', pendingReview: { kind: 'completion', jobId, forRevision: live.revision + 1 } })
}

/**
 * Apply the completion review: `pass` → complete (`completedAt = at.time`); `revise` → back to active
 * with the findings kept in `completionReview`; `needs-user` → paused for a decision.
 */
export function applyCompletionReview(task: Task | undefined, review: CompletionReviewResult, at: TransitionAt): Task {
  const live = requirePendingReview(task, 'completion', review.jobId)
  const completionReview: CompletionReview = {
    jobId: review.jobId,
    verdict: review.verdict,
    findings: [...review.findings],
    evidenceSeqs: [...review.evidenceSeqs],
    cutoffSeq: review.cutoffSeq,
  }
  const base = { pendingReview: undefined, completionReview }
  switch (review.verdict) {
    case 'pass': return advance(live, { ...base, phase: 'complete', completedAt: at.time })
    case 'revise': return advance(live, { ...base, phase: 'active' })
    case 'needs-user': return advance(live, { ...base, phase: 'paused', pauseReason: 'decision', resumePhase: 'active' })
  }
}

import { TaskwardError } from '../errors'
import { canonicalPlan } from './canonical'
import { validatePlan } from './dag'
import { advance, requireEnabled, requireLive, requirePendingReview, requirePhase, requireText } from './guards'
import { isTerminal, type NodeRun, type ReviewOutcome, type Task, type TaskPlan, type TransitionAt } from './types'

/*
 * Planning transitions: a new task, its plan, the plan review, the user's approval and objective edits.
 * Each is pure: `(task, input, at) → next task`, throwing a coded TaskwardError when not allowed.
 */

/**
 * Start a task (/task new). Allowed only when there is no current task or it is terminal (the caller
 * archives that one); otherwise `ACTIVE_TASK_CONFLICT` — there is no queue and no preemption.
 * `at.id` is the new task's id.
 */
export function newTask(current: Task | undefined, input: { objective: string }, at: TransitionAt): Task {
  if (current && !isTerminal(current)) {
    throw new TaskwardError('ACTIVE_TASK_CONFLICT',
      `Task ${current.id} is still ${current.phase}; finish it or clear it with /task clear before starting a new task.`,
      { taskId: current.id, phase: current.phase })
  }
  if (!at.id) throw new TaskwardError('TASK_INVALID', 'A new task needs an id (at.id); the controller must supply one.')
  return {
    id: at.id,
    revision: 1,
    objective: requireText(input.objective, 'objective'),
    phase: 'planning',
    enabled: true,
    nodeRuns: {},
  }
}

/** Submit a plan for review (task_submit_plan): planning → reviewing, waiting for plan review `jobId`. */
export function submitPlan(task: Task | undefined, input: { plan: TaskPlan, jobId: string }, at: TransitionAt): Task {
  const live = requirePhase(requireEnabled(requireLive(task)), ['planning'], 'submit a plan')
  validatePlan(input.plan)
  const jobId = requireText(input.jobId, 'review job id', 200)
  return advance(live, {
    phase: 'reviewing',
    plan: canonicalPlan(input.plan),
    pendingReview: { kind: 'plan', jobId, forRevision: live.revision + 1 },
  })
}

/**
 * Apply the plan reviewer's verdict: `pass` → awaiting-approval; `revise` → planning with the
 * reviewer's findings in `planFeedback`; `needs-user` → paused (`decision`), returning to planning.
 */
export function applyPlanReview(task: Task | undefined, review: ReviewOutcome, at: TransitionAt): Task {
  const live = requirePendingReview(task, 'plan', review.jobId)
  const base = { pendingReview: undefined, pauseReason: undefined, resumePhase: undefined }
  switch (review.verdict) {
    case 'pass':
      return advance(live, { ...base, phase: 'awaiting-approval', planFeedback: undefined })
    case 'revise':
      return advance(live, { ...base, phase: 'planning', planFeedback: [...review.findings] })
    case 'needs-user':
      return advance(live, {
        ...base, phase: 'paused', pauseReason: 'decision', resumePhase: 'planning', planFeedback: [...review.findings],
      })
  }
}

/**
 * The user's approval (/task approve): awaiting-approval → active, one pending run (attempt 1) per node.
 * A complete task answers `TASK_COMPLETED`: approval never stands in for a repair confirmation.
 */
export function approve(task: Task | undefined, at: TransitionAt): Task {
  const live = requirePhase(requireLive(task), ['awaiting-approval'], 'approve the plan')
  if (!live.plan) throw new TaskwardError('TASK_INVALID', `Task ${live.id} has no plan to approve; submit a plan first.`)
  const nodeRuns: Record<string, NodeRun> = {}
  for (const node of live.plan.nodes) nodeRuns[node.id] = { attempt: 1, status: 'pending', evidenceAfterSeq: at.seq }
  return advance(live, { phase: 'active', nodeRuns })
}

/**
 * Change the objective (/task edit). Allowed while planning or awaiting approval; an edit while awaiting
 * approval returns to planning, because the reviewed plan no longer answers the new objective.
 */
export function edit(task: Task | undefined, input: { objective: string }, at: TransitionAt): Task {
  const live = requirePhase(requireLive(task), ['planning', 'awaiting-approval'], 'edit the objective')
  return advance(live, { objective: requireText(input.objective, 'objective'), phase: 'planning' })
}

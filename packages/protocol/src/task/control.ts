import { TaskwardError } from '../errors'
import { advance, requireEnabled, requireLive, requirePhase, requireTask, phaseAdvice, requireText } from './guards'
import type { NodeRun, PauseReason, ResumablePhase, Task, TransitionAt } from './types'

/*
 * User control of a task: pause, resume, clear, supervision on/off. None of these can reopen a
 * complete task; only a confirmed repair does (see repair/reopen.ts). Supervision on/off is the one
 * change a complete task accepts besides that reopen: it stays complete, and the new revision makes
 * every pending repair proposal stale.
 */

/** Pause a live task (/task pause, a reviewer fault, a restart, the recovery controller). */
export function pause(task: Task | undefined, input: { reason: PauseReason }, at: TransitionAt): Task {
  const live = requirePhase(requireLive(task), ['planning', 'awaiting-approval', 'active', 'reviewing'], 'pause')
  return advance(live, { phase: 'paused', pauseReason: input.reason, resumePhase: live.phase as ResumablePhase })
}

/**
 * The phase `resume` returns to. Records before schema 7 did not store it; then a task with node runs
 * was executing (active) and one without was planning. This is derived at resume time, never written
 * back into an old record.
 */
export function resumeTarget(task: Task): ResumablePhase {
  if (task.resumePhase) return task.resumePhase
  return Object.keys(task.nodeRuns).length ? 'active' : 'planning'
}

/**
 * Resume a paused task (/task resume) into the phase it was paused from. Runs that waited for the
 * user's decision become `needs-revision` (ready again). When resuming into a review, `reviewJobId`
 * replaces the outstanding job (the controller re-runs a review that a fault or restart interrupted).
 */
export function resume(task: Task | undefined, input: { reviewJobId?: string }, at: TransitionAt): Task {
  const live = requirePhase(requireEnabled(requireLive(task)), ['paused'], 'resume')
  const phase = resumeTarget(live)
  const nodeRuns: Record<string, NodeRun> = {}
  for (const [id, run] of Object.entries(live.nodeRuns)) {
    nodeRuns[id] = run.status === 'awaiting-user' ? { ...run, status: 'needs-revision' } : run
  }
  let pendingReview = live.pendingReview
  if (phase === 'reviewing') {
    if (!pendingReview) {
      throw new TaskwardError('TASK_INVALID', `Task ${live.id} was paused in a review that it no longer records; inspect the session log.`)
    }
    if (input.reviewJobId !== undefined) {
      pendingReview = { ...pendingReview, jobId: requireText(input.reviewJobId, 'review job id', 200), forRevision: live.revision + 1 }
    }
  }
  return advance(live, { phase, pauseReason: undefined, resumePhase: undefined, nodeRuns, pendingReview })
}

/** Drop the task (/task clear). A complete task stays complete (and repairable) in history instead. */
export function clear(task: Task | undefined, at: TransitionAt): Task {
  const current = requireTask(task)
  if (current.phase === 'cleared') throw new TaskwardError('TASK_NOT_EXECUTING', phaseAdvice(current), { taskId: current.id })
  if (current.phase === 'complete') {
    throw new TaskwardError('TASK_COMPLETED',
      `Task ${current.id} is complete and stays in history; start a new task with /task new instead of clearing it.`,
      { taskId: current.id })
  }
  return advance(current, { phase: 'cleared', pendingReview: undefined, pauseReason: undefined, resumePhase: undefined })
}

/**
 * Turn supervision off or on (/task off | on) of a live or complete task. On a complete task this is
 * complete → complete with only `enabled` and the revision changed, so proposals made before it are
 * stale. A cleared task refuses (`TASK_NOT_EXECUTING`). Returns the input unchanged (same object, no
 * new revision) when it already has that setting, so that the caller writes nothing.
 */
export function setEnabled(task: Task | undefined, input: { enabled: boolean }, at: TransitionAt): Task {
  const current = requireTask(task)
  if (current.phase === 'cleared') throw new TaskwardError('TASK_NOT_EXECUTING', phaseAdvice(current), { taskId: current.id })
  if (current.enabled === input.enabled) return current
  return advance(current, { enabled: input.enabled })
}

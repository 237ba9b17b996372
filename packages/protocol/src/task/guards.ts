import { TaskwardError } from '../errors'
import { canonicalTask } from './canonical'
import type { ReviewKind, Task, TaskBinding } from './types'

/*
 * Preconditions shared by the transitions, and `advance`, the one way a transition produces its
 * result (revision + 1, canonical fresh object, the input untouched).
 */

/** What a task in `phase` is waiting for, as advice for the reader of an error. */
export function phaseAdvice(task: Task): string {
  switch (task.phase) {
    case 'planning': return 'The task is being planned; submit a plan with task_submit_plan.'
    case 'awaiting-approval': return 'The plan waits for the user to approve it with /task approve.'
    case 'active': return 'The task is executing.'
    case 'reviewing': return `A ${task.pendingReview ? `${task.pendingReview.kind} ` : ''}review is in progress; wait for its verdict.`
    case 'paused': return task.pauseReason === 'budget'
      ? 'The task is paused (budget): a budget is used up; /task resume is refused until the user raises it (the refusal names the budget and its setting).'
      : `The task is paused${task.pauseReason ? ` (${task.pauseReason})` : ''}; the user continues it with /task resume.`
    case 'complete': return 'The task is complete. To fix a defect, propose a repair with task_propose_repair and wait for '
      + 'the user to confirm it; for new work, start a new task with /task new.'
    case 'cleared': return 'The task was cleared; start a new one with /task new.'
  }
}

export function requireTask(task: Task | undefined): Task {
  if (!task) throw new TaskwardError('TASK_NOT_FOUND', 'There is no task in this session; start one with /task new <objective>.')
  return task
}

/** The task must not be terminal: complete → `TASK_COMPLETED`, cleared → `TASK_NOT_EXECUTING`. */
export function requireLive(task: Task | undefined): Task {
  const live = requireTask(task)
  if (live.phase === 'complete') throw new TaskwardError('TASK_COMPLETED', phaseAdvice(live), { taskId: live.id })
  if (live.phase === 'cleared') throw new TaskwardError('TASK_NOT_EXECUTING', phaseAdvice(live), { taskId: live.id })
  return live
}

export function requireEnabled(task: Task): Task {
  if (!task.enabled) {
    throw new TaskwardError('SUPERVISOR_DISABLED',
      `Supervision of task ${task.id} is off; the user turns it back on with /task on.`, { taskId: task.id })
  }
  return task
}

/** Execution transitions: a live, supervised task in phase `active`. */
export function requireExecuting(task: Task | undefined): Task {
  const live = requireEnabled(requireLive(task))
  if (live.phase !== 'active') {
    throw new TaskwardError('TASK_NOT_EXECUTING', `Task ${live.id} is not executing. ${phaseAdvice(live)}`,
      { taskId: live.id, phase: live.phase })
  }
  return live
}

/** A user/controller step that needs `phase` to be one of `phases`. */
export function requirePhase(task: Task, phases: readonly Task['phase'][], action: string): Task {
  if (!phases.includes(task.phase)) {
    throw new TaskwardError('TASK_NOT_EXECUTING',
      `Cannot ${action} while task ${task.id} is ${task.phase}. ${phaseAdvice(task)}`, { taskId: task.id, phase: task.phase })
  }
  return task
}

/** A reviewer result may apply only to the review the task waits for (same kind and job). */
export function requirePendingReview(task: Task | undefined, kind: ReviewKind, jobId: string): Task {
  const live = requireEnabled(requireLive(task))
  const pending = live.pendingReview
  if (live.phase !== 'reviewing' || !pending || pending.kind !== kind || pending.jobId !== jobId) {
    throw new TaskwardError('TASK_STALE',
      `Review job ${jobId} (${kind}) is not the review task ${live.id} waits for; its result was not applied. ${phaseAdvice(live)}`,
      { taskId: live.id, jobId, kind })
  }
  return live
}

/**
 * A caller that saw `binding` may act only if the task is still that task at that revision. Throws
 * `TASK_STALE` so that old tool calls, reviewer callbacks and console clicks cannot act on newer state.
 */
export function assertBinding(task: Task | undefined, binding: TaskBinding): Task {
  if (!task || task.id !== binding.taskId || task.revision !== binding.revision) {
    const now = task ? `task ${task.id} is at revision ${task.revision}` : 'there is no task'
    throw new TaskwardError('TASK_STALE',
      `This request was made for task ${binding.taskId} revision ${binding.revision}, but ${now}. Read the task status and retry.`,
      { ...binding, currentTaskId: task?.id, currentRevision: task?.revision })
  }
  return task
}

/** Non-empty trimmed text, or `TASK_INVALID` naming the field. */
export function requireText(value: unknown, field: string, max = 10000): string {
  const text = typeof value === 'string' ? value.trim() : ''
  if (!text || text.length > max) {
    throw new TaskwardError('TASK_INVALID', `The ${field} must be non-empty text of at most ${max} characters.`, { field })
  }
  return text
}

/**
 * The next revision of `task` with `patch` applied. A `patch` value of `undefined` removes the field.
 * Returns a fresh canonical object; the input is never mutated.
 */
export function advance(task: Task, patch: Partial<Task>): Task {
  return canonicalTask({ ...task, ...patch, revision: task.revision + 1 })
}

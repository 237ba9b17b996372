import type { Task } from './types'

/**
 * What kind of change one committed task snapshot is, relative to the snapshot before it:
 *
 * - `created`: a new task (no previous snapshot of this id).
 * - `cleared`: the task was cleared (`/task clear`).
 * - `reopened`: a complete task went back to work (a confirmed repair).
 * - `completed`: the completion review passed.
 * - `paused` / `resumed`: execution stopped (user, reviewer decision, review fault, restart, recovery) or went on.
 * - `enabled` / `disabled`: supervision switched on or off (`/task on|off`).
 * - `approved`: the user approved the reviewed plan.
 * - `edited`: the objective was edited (back to planning).
 * - `review-requested`: a plan, stage or completion review was requested (plan submitted, stage reported, completion requested).
 * - `revised`: a review asked for revision (plan feedback, a node needs revision, completion refused).
 * - `reviewed`: a review passed (plan ready for approval, node passed).
 * - `reworked`: a node was sent back for another attempt.
 * - `node-started`: a node began (or resumed) running.
 * - `updated`: anything else (a field changed that none of the above describes).
 */
export const TRANSITION_KINDS = [
  'created', 'cleared', 'reopened', 'completed', 'paused', 'resumed', 'enabled', 'disabled', 'approved', 'edited',
  'review-requested', 'revised', 'reviewed', 'reworked', 'node-started', 'updated',
] as const
export type TransitionKind = typeof TRANSITION_KINDS[number]

/**
 * The kind of the change `previous → next` of one task. Pure: it looks only at the two snapshots, so a
 * listener, a replay of the log and a test all derive the same kind. The checks run in the order of the
 * list above; the first that matches wins (a completion that also switched phases is `completed`).
 */
export function transitionKind(previous: Task | undefined, next: Task): TransitionKind {
  if (!previous || previous.id !== next.id) return 'created'
  if (next.phase === 'cleared') return 'cleared'
  if (previous.phase === 'complete' && next.phase !== 'complete') return 'reopened'
  if (next.phase === 'complete' && previous.phase !== 'complete') return 'completed'
  if (next.phase === 'paused' && previous.phase !== 'paused') return 'paused'
  if (previous.phase === 'paused' && next.phase !== 'paused') return 'resumed'
  if (previous.enabled !== next.enabled) return next.enabled ? 'enabled' : 'disabled'
  if (previous.phase === 'awaiting-approval' && next.phase === 'active') return 'approved'
  if (previous.objective !== next.objective) return 'edited'
  const asked = previous.pendingReview
  if (next.pendingReview && next.pendingReview.jobId !== asked?.jobId) return 'review-requested'
  if (asked && !next.pendingReview) return reviseAsked(asked, next) ? 'revised' : 'reviewed'
  const nodeIds = Object.keys(next.nodeRuns)
  if (nodeIds.some((id) => previous.nodeRuns[id] && next.nodeRuns[id].attempt > previous.nodeRuns[id].attempt)) return 'reworked'
  if (nodeIds.some((id) => next.nodeRuns[id].status === 'running' && previous.nodeRuns[id]?.status !== 'running')) return 'node-started'
  return 'updated'
}

function reviseAsked(asked: NonNullable<Task['pendingReview']>, next: Task): boolean {
  switch (asked.kind) {
    case 'plan': return next.phase === 'planning'
    case 'stage': return asked.nodeId !== undefined && next.nodeRuns[asked.nodeId]?.status === 'needs-revision'
    case 'completion': return next.completionReview?.verdict === 'revise'
    default: return false
  }
}

import { NODE_STATUS_WORDS, PAUSE_REASON_WORDS } from '../task/status-text'
import type { NodeRunStatus, PauseReason, TaskPhase } from '../task/types'

/*
 * The short labels every renderer shows (the console's page, the DSH panel, the milestone cards), next
 * to the longer words of `/task status` (status-text.ts). One table each, so a wording changes once.
 */

/** A phase as a heading-sized label. */
export const PHASE_LABELS: Record<TaskPhase, string> = {
  planning: 'Planning',
  'awaiting-approval': 'Awaiting approval',
  active: 'Active',
  reviewing: 'Reviewing',
  paused: 'Paused',
  complete: 'Complete',
  cleared: 'Cleared',
}

/** What the user does about a pause (appended to its reason where a page has room). */
export const PAUSE_REASON_NEXT: Record<PauseReason, string> = {
  user: '/task resume continues it',
  decision: 'read the findings, then /task resume',
  'review-fault': '/task resume runs the review again',
  restart: '/task resume continues it',
  recovery: 'read the verdict, then /task resume',
  budget: 'raise it, then /task resume',
  'model-context': 'shorten it or use a larger context, then /task resume',
  loop: 'read the log, then /task resume',
}

/** A pause reason with what to do next, e.g. "a budget is used up; raise it, then /task resume". */
export function pauseReasonLabel(reason: PauseReason): string {
  const words = PAUSE_REASON_WORDS[reason] ?? reason
  const next = PAUSE_REASON_NEXT[reason]
  return next ? `${words}; ${next}` : words
}

/** A node's status as a label; a node without a run (before approval) is "not started". */
export function nodeStatusLabel(status: NodeRunStatus | undefined): string {
  return status ? NODE_STATUS_WORDS[status] ?? status : 'not started'
}

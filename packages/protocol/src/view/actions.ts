import type { Task } from '../task/types'

/*
 * Which of the user's actions are allowed now, derived once for every renderer (the console's buttons,
 * the DSH panel's buttons): each names the `/task` line that performs it, bound to the task revision
 * the page shows (`id@revision`), so a click on a stale view is refused instead of acting on a task
 * the user did not see. Confirm and decline are the repair route's (`POST …/repair`), not commands.
 * `consult` is DSH's `/task consult` (the adapter registers it; our host's console does not show it).
 * Pure; the host still decides (a renderer never trusts this list to authorise anything).
 */

export type ActionId = 'approve' | 'pause' | 'resume' | 'consult' | 'propose-repair' | 'confirm' | 'decline'

export interface ActionView {
  id: ActionId
  label: string
  /** The `/task` line (absent for the repair route's actions). */
  command?: string
  /** The proposal a confirm/decline decides. */
  proposalId?: string
}

/** What the controller says beyond the task (a restart leaves a live task waiting for /task resume). */
export interface ControllerFacts {
  awaitingManualResume?: boolean
}

const LIVE = ['planning', 'awaiting-approval', 'active', 'reviewing'] as const

export function taskActions(
  task: Task | undefined,
  options: { poisoned?: boolean, controller?: ControllerFacts, awaitingDecision?: string } = {},
): ActionView[] {
  const actions: ActionView[] = []
  if (options.awaitingDecision) {
    actions.push({ id: 'confirm', label: 'Confirm reopening', proposalId: options.awaitingDecision })
    actions.push({ id: 'decline', label: 'Decline', proposalId: options.awaitingDecision })
  }
  if (!task || options.poisoned) return actions
  const binding = `${task.id}@${task.revision}`
  const live = (LIVE as readonly string[]).includes(task.phase)
  if (task.enabled && task.phase === 'awaiting-approval') actions.push({ id: 'approve', label: 'Approve plan', command: `/task approve ${binding}` })
  if (task.enabled && (task.phase === 'paused' || (live && options.controller?.awaitingManualResume))) {
    actions.push({ id: 'resume', label: 'Resume', command: `/task resume ${binding}` })
  }
  if (live) actions.push({ id: 'pause', label: 'Pause', command: `/task pause ${binding}` })
  if (task.phase !== 'cleared') actions.push({ id: 'consult', label: 'Consult', command: '/task consult' })
  if (task.enabled && task.phase === 'complete' && !options.awaitingDecision) actions.push({ id: 'propose-repair', label: 'Propose a repair' })
  return actions
}

import { TaskwardError } from '../errors'
import { findTask, type SupervisorState } from '../task/fold'
import { effectiveCycle, isTerminal, type Task } from '../task/types'
import type { TrackedProposal } from './types'

/*
 * The checks of the user's Confirm and Decline clicks, as pure functions of the supervisor projection.
 * The controller runs them once before waiting for the agent (cheap refusals answer at once) and again
 * inside the maintenance window, right before it writes; a failed check writes nothing.
 */

/** What a click is bound to: the proposal and the task revision the page showed. */
export interface RepairBinding {
  proposalId: string
  taskId: string
  revision: number
}

/** What the confirmation endpoint reports about a reopened task. */
export interface ReopenOutcome {
  taskId: string
  /** The revision of the reopened (active) state. */
  revision: number
  acceptanceCycle: number
  affectedNodeIds: string[]
}

function stale(binding: RepairBinding, why: string, details: Record<string, unknown> = {}): TaskwardError {
  return new TaskwardError('REPAIR_STALE', `Repair ${binding.proposalId} cannot be decided: ${why}. Reload the task and, if the defect `
    + 'is still there, propose the repair again.', { proposalId: binding.proposalId, taskId: binding.taskId, revision: binding.revision, ...details })
}

/** The proposal the click names, bound to the same task and revision; otherwise `REPAIR_STALE`. */
export function boundProposal(state: SupervisorState, binding: RepairBinding): TrackedProposal {
  const tracked = state.proposals.find((t) => t.proposal.id === binding.proposalId)
  if (!tracked) throw stale(binding, 'no such proposal is known for this session')
  const { proposal } = tracked
  if (proposal.taskId !== binding.taskId || proposal.taskRevision !== binding.revision) {
    throw stale(binding, `the proposal targets task ${proposal.taskId} revision ${proposal.taskRevision}`)
  }
  return tracked
}

/** What an applied proposal did, read back from the task's repair history (for "already applied"). */
export function appliedOutcome(state: SupervisorState, tracked: TrackedProposal): ReopenOutcome {
  const { proposal } = tracked
  const task = findTask(state, proposal.taskId)
  const entry = task?.repairHistory?.find((h) => h.proposalId === proposal.id)
  // Read back, never invented: an applied reopen always left its entry (tasks stay in history).
  if (!entry) {
    throw new TaskwardError('TASK_STATE_UNAVAILABLE', `Repair ${proposal.id} is applied but task ${proposal.taskId} has no history entry for it; `
      + 'inspect the session log.', { proposalId: proposal.id, taskId: proposal.taskId })
  }
  return {
    taskId: proposal.taskId,
    revision: proposal.taskRevision + 1,
    acceptanceCycle: entry.previousCycle + 1,
    affectedNodeIds: [...proposal.affectedNodeIds],
  }
}

export type ConfirmDecision =
  | { kind: 'applied', tracked: TrackedProposal }
  /** `receipt: false` when a receipt exists already (a reopen interrupted after it): append only the reopen. */
  | { kind: 'reopen', tracked: TrackedProposal, target: Task, receipt: boolean }

/**
 * Whether a Confirm click may reopen its task now. Order: proposal and binding (`REPAIR_STALE`),
 * already applied (nothing to do), the execution slot (another live task → `ACTIVE_TASK_CONFLICT`; no
 * queue, no preemption), the target's revision and the proposal's status (`REPAIR_STALE`), then
 * supervision (`SUPERVISOR_DISABLED`). Staleness comes before supervision because /task off and on
 * each advance the revision: a proposal made before them can never be confirmed, so "turn supervision
 * on" would be the wrong advice for it. The workspace stamp is checked by the caller (it needs I/O).
 */
export function confirmDecision(state: SupervisorState, binding: RepairBinding): ConfirmDecision {
  const tracked = boundProposal(state, binding)
  if (tracked.status === 'applied') return { kind: 'applied', tracked }
  const current = state.current
  if (current && !isTerminal(current) && current.id !== binding.taskId) {
    throw new TaskwardError('ACTIVE_TASK_CONFLICT',
      `Task ${current.id} is ${current.phase} in this session; only one task executes at a time. Finish, pause and clear, `
      + 'or wait for it before confirming this repair (repairs are never queued and never preempt).',
      { activeTaskId: current.id, proposalId: binding.proposalId })
  }
  const target = findTask(state, binding.taskId)
  if (!target) throw stale(binding, `task ${binding.taskId} is not in this session`)
  if (target.phase !== 'complete' || target.revision !== binding.revision) {
    const off = target.enabled ? '' : ' and its supervision is off (turn it on with /task on before proposing again)'
    throw stale(binding, `task ${target.id} is ${target.phase} at revision ${target.revision}${off}`, { currentRevision: target.revision })
  }
  if (tracked.status !== 'pending' && tracked.status !== 'confirmed') throw stale(binding, `the proposal is ${tracked.status}`)
  if (!target.enabled) {
    throw new TaskwardError('SUPERVISOR_DISABLED', `Supervision of task ${target.id} is off; turn it on with /task on, then propose the repair `
      + 'again for the revision shown then (switching supervision changes the revision).', { taskId: target.id, proposalId: binding.proposalId })
  }
  return { kind: 'reopen', tracked, target, receipt: tracked.status === 'pending' }
}

export type DeclineDecision = { kind: 'declined', tracked: TrackedProposal } | { kind: 'decline', tracked: TrackedProposal }

/** Whether a Decline click may be recorded: idempotent when already declined; pending or confirmed only. */
export function declineDecision(state: SupervisorState, binding: RepairBinding): DeclineDecision {
  const tracked = boundProposal(state, binding)
  if (tracked.status === 'declined') return { kind: 'declined', tracked }
  if (tracked.status !== 'pending' && tracked.status !== 'confirmed') {
    throw stale(binding, `the proposal is ${tracked.status}`)
  }
  return { kind: 'decline', tracked }
}

import { isDeepStrictEqual } from 'node:util'
import { TaskwardError } from '../errors'
import { canonicalTask } from '../task/canonical'
import { affectedNodes } from '../task/dag'
import { effectiveCycle, type NodeRun, type RepairHistoryEntry, type Task } from '../task/types'
import type { ConfirmationReceipt, RepairProposal } from './types'

/**
 * The one deterministic complete → active transition: the task reopened by a confirmed proposal.
 * The projection recomputes it for every such state record and accepts only an exact match, so this
 * function is the contract between the controller that writes and every reader that folds.
 *
 * - revision + 1, phase `active`, `acceptanceCycle = (old ?? 1) + 1`, `reopenedFromProposalId`;
 * - affected runs → `{attempt + 1, pending, evidenceAfterSeq: confirmation seq}`; others unchanged;
 * - completion review, `completedAt` and any pause or pending review cleared;
 * - `repairHistory` gains what the repair replaced (with `completedAt` only when it was recorded).
 *
 * Refuses without a confirmation (`REPAIR_CONFIRMATION_REQUIRED`), on a disabled supervisor
 * (`SUPERVISOR_DISABLED`) and when task, revision, phase or impact do not match (`REPAIR_STALE`).
 */
export function reopenTask(task: Task, proposal: RepairProposal, confirmation: ConfirmationReceipt | undefined): Task {
  if (!confirmation || confirmation.proposalId !== proposal.id) {
    throw new TaskwardError('REPAIR_CONFIRMATION_REQUIRED',
      `Repair ${proposal.id} has not been confirmed; the user must click Confirm in the impact panel.`, { proposalId: proposal.id })
  }
  const stale = (why: string) => new TaskwardError('REPAIR_STALE',
    `Repair ${proposal.id} no longer matches task ${task.id}: ${why}. Propose the repair again for the task as it is now.`,
    { proposalId: proposal.id, taskId: task.id, revision: task.revision })
  if (proposal.taskId !== task.id || confirmation.taskId !== task.id) throw stale('it targets another task')
  if (proposal.taskRevision !== task.revision || confirmation.taskRevision !== task.revision) {
    throw stale(`it was made for revision ${proposal.taskRevision}, the task is at ${task.revision}`)
  }
  if (task.phase !== 'complete' || !task.plan) throw stale(`the task is ${task.phase}, not complete`)
  if (!task.enabled) {
    throw new TaskwardError('SUPERVISOR_DISABLED', `Supervision of task ${task.id} is off; turn it on with /task on, then confirm again.`)
  }
  let impact: string[]
  try {
    impact = affectedNodes(task.plan, proposal.rootNodeIds)
  } catch {
    throw stale('its root nodes are not in the plan')
  }
  if (!isDeepStrictEqual(impact, proposal.affectedNodeIds)) throw stale('its impact differs from the plan')
  if (task.plan.nodes.some((node) => !task.nodeRuns[node.id])) throw stale('the task lacks node runs')

  const nodeRuns: Record<string, NodeRun> = { ...task.nodeRuns }
  for (const id of impact) {
    nodeRuns[id] = { attempt: task.nodeRuns[id].attempt + 1, status: 'pending', evidenceAfterSeq: confirmation.seq }
  }
  const entry: RepairHistoryEntry = {
    proposalId: proposal.id,
    title: proposal.title,
    reason: proposal.reason,
    rootNodeIds: [...proposal.rootNodeIds],
    affectedNodeIds: impact,
    previousCycle: effectiveCycle(task),
    previousRuns: task.nodeRuns,
    previousCompletionReview: task.completionReview,
    completedAt: task.completedAt,
    confirmedAt: confirmation.confirmedAt,
    confirmationSeq: confirmation.seq,
  }
  return canonicalTask({
    ...task,
    revision: task.revision + 1,
    phase: 'active',
    pauseReason: undefined,
    resumePhase: undefined,
    pendingReview: undefined,
    completionReview: undefined,
    completedAt: undefined,
    nodeRuns,
    acceptanceCycle: effectiveCycle(task) + 1,
    reopenedFromProposalId: proposal.id,
    repairHistory: [...(task.repairHistory ?? []), entry],
  })
}

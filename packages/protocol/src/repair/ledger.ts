import { TaskwardError } from '../errors'
import type { RepairConfirm, RepairDecline, RepairProposal, TrackedProposal } from './types'

/*
 * The proposal window of the projection: pure updates of a `TrackedProposal[]` (oldest first) by the
 * repair records. Each returns a new array and new entries for what changed; a record that cannot
 * follow the current window throws (the projection turns that into poison).
 */

/** How many proposals the projection keeps; older ones stay durable in the log only. */
export const PROPOSAL_WINDOW = 50

function fail(message: string): TaskwardError {
  return new TaskwardError('REPAIR_STALE', message)
}

/**
 * A new proposal: rejected when its id is already in the window or `proposedSeq` is not the seq of
 * its own event; otherwise every pending or confirmed proposal becomes `superseded` and the new one
 * is appended as `pending`, keeping the last `PROPOSAL_WINDOW`.
 */
export function recordProposal(window: readonly TrackedProposal[], proposal: RepairProposal, seq: number): TrackedProposal[] {
  if (window.some((t) => t.proposal.id === proposal.id)) throw fail(`duplicate repair proposal id ${proposal.id}`)
  if (proposal.proposedSeq !== seq) throw fail(`repair proposal ${proposal.id} claims seq ${proposal.proposedSeq} but is at seq ${seq}`)
  const next: TrackedProposal[] = window.map((t) => t.status === 'pending' || t.status === 'confirmed'
    ? { ...t, status: 'superseded', supersededBySeq: seq }
    : t)
  next.push({ proposal, status: 'pending' })
  return next.slice(-PROPOSAL_WINDOW)
}

function decisionTarget(window: readonly TrackedProposal[], decision: RepairConfirm | RepairDecline, kind: string): number {
  const index = window.findIndex((t) => t.proposal.id === decision.proposalId)
  if (index < 0) throw fail(`stale repair decision: ${kind} for unknown proposal ${decision.proposalId}`)
  const { proposal, status } = window[index]
  if (proposal.taskId !== decision.taskId || proposal.taskRevision !== decision.taskRevision) {
    throw fail(`stale repair decision: ${kind} of ${proposal.id} names task ${decision.taskId} revision ${decision.taskRevision}, `
      + `the proposal targets ${proposal.taskId} revision ${proposal.taskRevision}`)
  }
  // `confirmed` is still undecided in effect: a reopen interrupted after the receipt needs another click.
  if (status !== 'pending' && status !== 'confirmed') {
    throw fail(`stale repair decision: ${kind} of ${proposal.id}, which is ${status}`)
  }
  return index
}

/** A confirmation receipt: the proposal becomes `confirmed` (a repeated receipt replaces the earlier one). */
export function recordConfirm(window: readonly TrackedProposal[], confirm: RepairConfirm, seq: number): TrackedProposal[] {
  const index = decisionTarget(window, confirm, 'confirmation')
  const next = [...window]
  next[index] = { ...window[index], status: 'confirmed', confirmation: { ...confirm, seq } }
  return next
}

/** A decline: the proposal becomes `declined`; the task stays complete. */
export function recordDecline(window: readonly TrackedProposal[], decline: RepairDecline, seq: number): TrackedProposal[] {
  const index = decisionTarget(window, decline, 'decline')
  const next = [...window]
  next[index] = { ...window[index], status: 'declined', decline: { ...decline, seq } }
  return next
}

/** The confirmed proposal whose reopen the projection may accept for `taskId` at `revision`. */
export function confirmedFor(window: readonly TrackedProposal[], taskId: string, revision: number): TrackedProposal | undefined {
  return window.find((t) => t.status === 'confirmed' && t.proposal.taskId === taskId && t.proposal.taskRevision === revision)
}

/** The reopened state at `seq` was accepted: the proposal becomes `applied`. */
export function markApplied(window: readonly TrackedProposal[], proposalId: string, seq: number): TrackedProposal[] {
  return window.map((t) => t.proposal.id === proposalId ? { ...t, status: 'applied', appliedSeq: seq } : t)
}

/**
 * The task moved to `revision` without a repair (/task off | on of a complete task): its undecided
 * proposals for earlier revisions can never be confirmed any more, so they show as `superseded`.
 */
export function supersedeStale(window: readonly TrackedProposal[], taskId: string, revision: number, seq: number): TrackedProposal[] {
  return window.map((t) => t.proposal.taskId === taskId && t.proposal.taskRevision < revision && (t.status === 'pending' || t.status === 'confirmed')
    ? { ...t, status: 'superseded', supersededBySeq: seq }
    : t)
}

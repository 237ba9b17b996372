import { randomUUID } from 'node:crypto'
import type { Session } from '@taskward/host'
import {
  appliedOutcome, boundProposal, compareStamps, confirmDecision, confirmEnvelope, declineDecision, declineEnvelope,
  effectiveCycle, findTask, reopenTask, repairFollowup, sameStamp, taskStateEnvelope, TaskwardError,
  type RepairBinding, type ReopenOutcome, type Task, type TrackedProposal,
} from '@taskward/protocol'
import type { Transaction } from '@taskward/plugin-supervisor'
import type { RepairService } from './service'

export interface ConfirmOutcome extends ReopenOutcome {
  outcome: 'reopened' | 'already-applied'
}

export interface DeclineOutcome {
  outcome: 'declined' | 'already-declined'
}

function notReopenable(binding: RepairBinding, why: string) {
  return new TaskwardError('REPAIR_STALE', `Repair ${binding.proposalId} cannot reopen its task: ${why}. Reload the task and confirm again.`,
    { proposalId: binding.proposalId })
}

export interface ConfirmOptions {
  /** Carried out for the host the user clicked on (see relay.ts): answered here, never relayed on. */
  relayed?: boolean
}

/**
 * The user's Confirm click. Refusals that need no waiting answer at once (unknown or mismatched
 * proposal, a final status, another live task, a changed revision, supervision off); an applied
 * proposal answers `already-applied` and wakes nothing. Then,
 * once the main agent is idle and inside its maintenance window (or the session's repair lock when no
 * agent is live), every check runs again, the workspace is stamped and compared, and the receipt and
 * the reopened state are appended; finally the follow-up turn is queued. A failed check writes nothing.
 * When another host drives the session (`LEASE_HELD` on MySQL/MariaDB), the click is relayed to it
 * and answers what it decided; this host writes nothing to the log.
 */
export async function confirmRepair(service: RepairService, main: Session, binding: RepairBinding, options: ConfirmOptions = {}): Promise<ConfirmOutcome> {
  const state = await service.readState(main)
  const early = boundProposal(state, binding)
  if (early.status === 'applied') return { outcome: 'already-applied', ...appliedOutcome(state, early) }
  if (early.status === 'declined' || early.status === 'superseded') {
    // Say why when the task itself moved on (e.g. /task off | on changed its revision).
    const target = findTask(state, binding.taskId)
    const moved = target && target.revision !== binding.revision
      ? `Task ${target.id} is at revision ${target.revision} now${target.enabled ? '' : ' and its supervision is off (turn it on with /task on first)'}. `
      : ''
    throw new TaskwardError('REPAIR_STALE', `Repair ${binding.proposalId} was ${early.status}; it can no longer be confirmed. ${moved}`
      + 'Propose the repair again if the defect is still there.', { proposalId: binding.proposalId, status: early.status })
  }
  // The remaining state checks, at once: waiting for the agent cannot make a stale or disabled target confirmable.
  confirmDecision(state, binding)
  const decide = () => service.locks.run(main.id, () => reopenInWindow(service, main, binding))
  let agent
  try {
    agent = await service.mainAgent(main)
  } catch (error) {
    // Another host drives the session: only its maintenance window may write the receipt.
    if (options.relayed || !service.relay || !TaskwardError.is(error, 'LEASE_HELD')) throw error
    return service.relay.relay(main, binding, error)
  }
  if (!agent) return decide()
  await agent.whenIdle()
  try {
    return await agent.runMaintenance(decide)
  } catch (error) {
    // This host's agent lost the lease to another host (a fenced append refused, nothing written by
    // it): the click goes to the host that drives the session now.
    if (options.relayed || !service.relay || !TaskwardError.is(error, 'LEASE_LOST')) throw error
    const held = await service.relay.heldElsewhere(main)
    if (held) return service.relay.relay(main, binding, held)
    // Nobody drives the session now (the lease lapsed, or a host waiting on this one fenced it off):
    // this host takes it back — the resume takes the lapsed lease for its live agent — and decides
    // the click itself, once. Another host winning the lease meanwhile makes this LEASE_HELD: relayed.
    let resumed
    try {
      resumed = await service.takeBack(main)
    } catch (refusal) {
      if (!TaskwardError.is(refusal, 'LEASE_HELD')) throw refusal
      return service.relay.relay(main, binding, refusal)
    }
    await resumed.whenIdle()
    return resumed.runMaintenance(decide)
  }
}

async function reopenInWindow(service: RepairService, main: Session, binding: RepairBinding): Promise<ConfirmOutcome> {
  const { supervisor } = service
  const state = await service.readState(main)
  const decision = confirmDecision(state, binding)
  if (decision.kind === 'applied') return { outcome: 'already-applied', ...appliedOutcome(state, decision.tracked) }
  const { proposal } = decision.tracked
  const stamp = await service.stamp(main)
  if (!sameStamp(proposal.artifact, stamp)) {
    throw new TaskwardError('ARTIFACT_CHANGED',
      'Files changed since the proposal; propose again so that the impact shown matches the workspace.',
      { proposalId: proposal.id, reason: 'stamp-mismatch', differences: compareStamps(proposal.artifact, stamp) })
  }
  if (decision.receipt) {
    // Another host can take the same click meanwhile (hosts sharing a store do not share the lock):
    // its receipt, or its whole reopen, is what this click asked for, so this click then answers
    // like a repeated one — `already-applied` — or finishes the reopen behind that receipt.
    const raced = await supervisor.transact(main, (now) => {
      const again = confirmDecision(now, binding)
      if (again.kind === 'applied') return { records: [], result: appliedOutcome(now, again.tracked) }
      if (!again.receipt) return { records: [], result: undefined }
      const receipt = { proposalId: proposal.id, taskId: proposal.taskId, taskRevision: proposal.taskRevision, source: 'web-confirmation' as const, confirmedAt: Date.now() }
      // Dry run: a reopen the projection would refuse must not leave a receipt behind.
      reopenTask(again.target, proposal, { ...receipt, seq: main.seq })
      return { records: [confirmEnvelope(receipt, randomUUID())], result: undefined }
    })
    if (raced) return { outcome: 'already-applied', ...raced }
  }
  // The reopen is computed from the receipt as recorded (its real seq), in its own transaction.
  const reopen = await supervisor.transact(main, (now): Transaction<Task | ReopenOutcome> => {
    const again = confirmDecision(now, binding)
    if (again.kind === 'applied') return { records: [], result: appliedOutcome(now, again.tracked) }
    if (again.receipt) throw notReopenable(binding, 'its confirmation receipt is missing')
    const task = reopenTask(again.target, proposal, again.tracked.confirmation)
    return { records: [taskStateEnvelope(task)], result: task }
  })
  if (!('phase' in reopen)) return { outcome: 'already-applied', ...reopen }
  const reopened = reopen
  await followUp(service, main, reopened, decision.tracked)
  return {
    outcome: 'reopened',
    taskId: reopened.id,
    revision: reopened.revision,
    acceptanceCycle: effectiveCycle(reopened),
    affectedNodeIds: [...proposal.affectedNodeIds],
  }
}

/** Queue the controller's follow-up turn; the reopen is durable even if the agent cannot be woken. */
async function followUp(service: RepairService, main: Session, task: Task, tracked: TrackedProposal) {
  try {
    await service.supervisor.continueTask(main.id, repairFollowup(task, tracked.proposal))
  } catch (error) {
    service.logger.warn('session %s: task %s was reopened but the follow-up turn could not be queued (%s); /task resume continues it',
      main.id, task.id, (error as Error).message)
  }
}

/** The user's Decline click: no idle wait; the task stays complete; repeating it writes nothing. */
export function declineRepair(service: RepairService, main: Session, binding: RepairBinding): Promise<DeclineOutcome> {
  return service.locks.run(main.id, () => service.supervisor.transact<DeclineOutcome>(main, (state) => {
    const decision = declineDecision(state, binding)
    if (decision.kind === 'declined') return { records: [], result: { outcome: 'already-declined' } }
    const { proposal } = decision.tracked
    const decline = { proposalId: proposal.id, taskId: proposal.taskId, taskRevision: proposal.taskRevision, source: 'web-confirmation' as const, declinedAt: Date.now() }
    return { records: [declineEnvelope(decline, randomUUID())], result: { outcome: 'declined' } }
    // Committed at once, as a click is answered only once written (a step of the agent may be open).
  }, { commit: true }))
}

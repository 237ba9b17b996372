import { randomUUID } from 'node:crypto'
import type { Session } from '@taskward/host'
import {
  buildProposal, findIdenticalPending, findTask, proposalEnvelope, proposalIdentity, TaskwardError,
  type RepairProposal, type RepairSource, type SessionEvent, type SupervisorState, type Task, type WorkspaceArtifact,
} from '@taskward/protocol'
import type { RepairService } from './service'

/** A repair proposal as a caller (tool, console) asks for it. */
export interface ProposeRequest {
  /** Absent: the session's current task. */
  taskId?: string
  /** Absent: the target task's revision now. */
  revision?: number
  title: string
  reason: string
  rootNodeIds: string[]
  evidenceSeqs: number[]
  source: RepairSource
  /** Absent for the user's own proposals: identities are never invented. */
  proposerSessionId?: string
}

export interface ProposeOutcome {
  outcome: 'proposed' | 'identical-pending'
  proposal: RepairProposal
}

// A stand-in stamp for the dry run that reports scope and evidence errors before the (slow) stamp.
const PLACEHOLDER: WorkspaceArtifact = { workspaceKey: 'placeholder', digest: '0'.repeat(64), files: 0, bytes: 0 }

/** The complete task a proposal targets (current, then history); otherwise `REPAIR_STALE`. */
function targetOf(state: SupervisorState, taskId: string | undefined, revision: number | undefined): Task {
  const task = taskId === undefined ? state.current : findTask(state, taskId)
  if (!task) {
    throw new TaskwardError('REPAIR_STALE', taskId === undefined
      ? 'This session has no task to repair; start one with /task new.'
      : `Task ${taskId} is not in this session; check task_status for the task ids.`, { taskId })
  }
  if (revision !== undefined && revision !== task.revision) {
    const off = task.enabled ? '' : ' Its supervision is off: turn it on with /task on first (that changes the revision again).'
    throw new TaskwardError('REPAIR_STALE',
      `Task ${task.id} is at revision ${task.revision}, not ${revision}; read the task again and propose for the revision shown now.${off}`,
      { taskId: task.id, revision, currentRevision: task.revision })
  }
  return task
}

/** The main-session events the evidence seqs name (missing ones are left for validation to refuse). */
async function evidenceEvents(main: Session, seqs: readonly number[]): Promise<Map<number, SessionEvent>> {
  const events = new Map<number, SessionEvent>()
  for (const seq of new Set(seqs)) {
    if (!Number.isSafeInteger(seq) || seq < 0) continue
    const event = await main.event(seq)
    if (event) events.set(seq, event)
  }
  return events
}

/**
 * Propose a repair of a complete task of `main`: validate target, scope and evidence, stamp the
 * workspace, and append the `proposal` record — unless an identical proposal is pending, which is
 * returned instead. Changes no task state and grants nothing. Refusal order: poisoned log, a stale
 * revision binding (`REPAIR_STALE`), a task that is not complete, supervision off
 * (`SUPERVISOR_DISABLED`), then scope and evidence; all of them before the workspace is stamped,
 * and again inside the transaction that writes.
 */
export async function proposeRepair(service: RepairService, main: Session, request: ProposeRequest): Promise<ProposeOutcome> {
  const { supervisor } = service
  const state = await supervisor.state(main)
  if (state.poisoned) throw new TaskwardError('SUPERVISOR_POISONED', `${state.poisoned.message}. A person must inspect the session log first.`)
  const events = await evidenceEvents(main, request.evidenceSeqs)
  const build = (task: Task, artifact: WorkspaceArtifact, proposedSeq: number) => buildProposal({
    id: randomUUID(),
    task,
    source: request.source,
    proposerSessionId: request.proposerSessionId,
    title: request.title,
    reason: request.reason,
    rootNodeIds: request.rootNodeIds,
    evidenceSeqs: request.evidenceSeqs,
    events,
    artifact,
    proposedAt: Date.now(),
    proposedSeq,
  })
  // Refuse what can be refused without touching the disk.
  build(targetOf(state, request.taskId, request.revision), PLACEHOLDER, main.seq)
  const stamp = await service.stamp(main)
  return service.locks.run(main.id, () => supervisor.transact<ProposeOutcome>(main, (now) => {
    const proposal = build(targetOf(now, request.taskId, request.revision), stamp, main.seq)
    const identical = findIdenticalPending(now.proposals, proposalIdentity(proposal))
    if (identical) return { records: [], result: { outcome: 'identical-pending', proposal: identical.proposal } }
    return { records: [proposalEnvelope(proposal)], result: { outcome: 'proposed', proposal } }
    // The main agent's proposal is part of its step's commit; any other (a click, a consultation) is
    // answered only once written, so a refused step of the main agent cannot take it down afterwards.
  }, { commit: request.source !== 'main-agent' }))
}

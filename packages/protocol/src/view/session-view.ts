import type { SessionEvent } from '../events'
import { sourceLabel } from '../repair/proposal'
import { EVIDENCE_QUOTE_MAX, quoteEvidence } from '../repair/view'
import type { ProposalStatus, RepairSource, TrackedProposal } from '../repair/types'
import type { SupervisorState } from '../task/fold'
import { stampParts, type StampParts } from '../workspace/stamp'
import { taskActions, type ActionView, type ControllerFacts } from './actions'
import { impactNote, stampText } from './impact-text'
import { taskDetailView, type TaskDetailView } from './task-view'

/*
 * The read model of one main session that the console and the DSH panel render: current task, history,
 * proposals with their quoted evidence (the impact panel's facts) and the actions allowed now. Pure:
 * events are looked up through the map the caller read from the log.
 */

/** Longest quoted evidence text (the repair view's bound). */
export const QUOTE_MAX = EVIDENCE_QUOTE_MAX

export interface QuotedEvent {
  seq: number
  /** Absent when the event is not in the log (shown as "missing"). */
  type?: string
  text: string
}

export interface ProposalView {
  id: string
  taskId: string
  taskRevision: number
  title: string
  reason: string
  source?: RepairSource
  sourceLabel: ReturnType<typeof sourceLabel>
  proposerSessionId?: string
  rootNodeIds: string[]
  affectedNodeIds: string[]
  evidence: QuotedEvent[]
  artifact: { workspaceKey: string, digest: string, shortDigest: string, files: number, bytes: number } & StampParts
  proposedAt: number
  proposedSeq: number
  status: ProposalStatus
  confirmedAt?: number
  declinedAt?: number
  /** Waiting for the user's click (pending, or confirmed with an interrupted reopen). */
  awaitingDecision: boolean
  /** The impact panel's words, derived once for every renderer (impact-text.ts). */
  text: {
    /** The workspace stamp's counts ("12 files, 3.4 KiB; dependencies: …"). */
    stamp: string
    /** What confirming does, for the task's current acceptance cycle, and what the stamp does not prove. */
    note: string
  }
}

export interface SessionSummary {
  id: string
  cwd: string
  role: string
  createdAt: number
  /** The seq the next event gets (events so far). */
  seq: number
}

export interface SessionView {
  session: SessionSummary
  current?: TaskDetailView
  /** Terminal tasks replaced by a newer one, newest first. */
  history: TaskDetailView[]
  /** Newest first. */
  proposals: ProposalView[]
  /** The proposal that waits for the user's decision, if any. */
  awaitingDecision?: string
  poisoned?: { seq: number, message: string }
  /** What the user may do now (buttons), derived once (actions.ts). */
  actions: ActionView[]
}

/** A one-line, bounded rendering of an evidence event. */
export function quoteEvent(event: SessionEvent | undefined, seq: number): QuotedEvent {
  if (!event) return { seq, text: 'This event is not in the session log.' }
  return { ...quoteEvidence(event), seq }
}

/** `cycle`: the acceptance cycle the proposal's task is in now (1 when unknown). */
export function proposalView(tracked: TrackedProposal, events: ReadonlyMap<number, SessionEvent>, cycle = 1): ProposalView {
  const { proposal, status } = tracked
  const parts = stampParts(proposal.artifact)
  return {
    id: proposal.id,
    taskId: proposal.taskId,
    taskRevision: proposal.taskRevision,
    title: proposal.title,
    reason: proposal.reason,
    ...(proposal.source ? { source: proposal.source } : {}),
    sourceLabel: sourceLabel(proposal.source),
    ...(proposal.proposerSessionId ? { proposerSessionId: proposal.proposerSessionId } : {}),
    rootNodeIds: [...proposal.rootNodeIds],
    affectedNodeIds: [...proposal.affectedNodeIds],
    evidence: proposal.evidenceSeqs.map((seq) => quoteEvent(events.get(seq), seq)),
    artifact: { ...proposal.artifact, shortDigest: proposal.artifact.digest.slice(0, 12), ...parts },
    proposedAt: proposal.proposedAt,
    proposedSeq: proposal.proposedSeq,
    status,
    ...(tracked.confirmation ? { confirmedAt: tracked.confirmation.confirmedAt } : {}),
    ...(tracked.decline ? { declinedAt: tracked.decline.declinedAt } : {}),
    awaitingDecision: status === 'pending' || status === 'confirmed',
    text: { stamp: stampText(parts), note: impactNote(proposal.taskId, cycle) },
  }
}

/** Every evidence seq the proposals of a state quote (what the caller must read from the log). */
export function evidenceSeqsOf(state: SupervisorState): number[] {
  return [...new Set(state.proposals.flatMap((p) => p.proposal.evidenceSeqs))].sort((a, b) => a - b)
}

export function sessionView(
  session: SessionSummary, state: SupervisorState, events: ReadonlyMap<number, SessionEvent>, controller?: ControllerFacts,
): SessionView {
  const tasks = [...(state.current ? [state.current] : []), ...state.history]
  const cycleOf = (taskId: string) => tasks.find((task) => task.id === taskId)?.acceptanceCycle ?? 1
  const proposals = state.proposals.map((p) => proposalView(p, events, cycleOf(p.proposal.taskId))).reverse()
  const waiting = proposals.find((p) => p.awaitingDecision)
  return {
    session: { ...session },
    ...(state.current ? { current: taskDetailView(state.current, state.reviews, true) } : {}),
    history: state.history.map((task) => taskDetailView(task, state.reviews, false)).reverse(),
    proposals,
    ...(waiting ? { awaitingDecision: waiting.id } : {}),
    ...(state.poisoned ? { poisoned: { ...state.poisoned } } : {}),
    actions: taskActions(state.current, { poisoned: !!state.poisoned, ...(controller ? { controller } : {}), ...(waiting ? { awaitingDecision: waiting.id } : {}) }),
  }
}

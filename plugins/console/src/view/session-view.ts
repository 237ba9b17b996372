import {
  EventTypes, sourceLabel, stampParts, type StampParts, type ProposalStatus, type RepairSource, type SessionEvent, type SupervisorState, type TrackedProposal,
} from '@taskward/protocol'
import { taskDetailView, type TaskDetailView } from './task-view'

/*
 * The console's read model of one main session: current task, history, proposals with their quoted
 * evidence, and the refusal advice the page shows after a click. Pure: events are looked up through
 * the map the caller read from the log.
 */

export const QUOTE_MAX = 500

export interface EvidenceQuote {
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
  evidence: EvidenceQuote[]
  artifact: { workspaceKey: string, digest: string, shortDigest: string, files: number, bytes: number } & StampParts
  proposedAt: number
  proposedSeq: number
  status: ProposalStatus
  confirmedAt?: number
  declinedAt?: number
  /** Waiting for the user's click (pending, or confirmed with an interrupted reopen). */
  awaitingDecision: boolean
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
}

/** A one-line, bounded rendering of an evidence event. */
export function quoteEvent(event: SessionEvent | undefined, seq: number): EvidenceQuote {
  if (!event) return { seq, text: 'This event is not in the session log.' }
  const data = event.data ?? {}
  let text: string
  if (event.type === EventTypes.toolResult) {
    const outcome = data.error ? `error ${data.error.code}: ${data.error.message}` : JSON.stringify(data.result ?? null)
    text = `${data.name ?? 'tool'} → ${outcome}`
  } else if (typeof data.text === 'string') {
    text = data.text
  } else {
    text = JSON.stringify(data)
  }
  return { seq, type: event.type, text: text.length > QUOTE_MAX ? `${text.slice(0, QUOTE_MAX - 1)}…` : text }
}

export function proposalView(tracked: TrackedProposal, events: ReadonlyMap<number, SessionEvent>): ProposalView {
  const { proposal, status } = tracked
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
    artifact: { ...proposal.artifact, shortDigest: proposal.artifact.digest.slice(0, 12), ...stampParts(proposal.artifact) },
    proposedAt: proposal.proposedAt,
    proposedSeq: proposal.proposedSeq,
    status,
    ...(tracked.confirmation ? { confirmedAt: tracked.confirmation.confirmedAt } : {}),
    ...(tracked.decline ? { declinedAt: tracked.decline.declinedAt } : {}),
    awaitingDecision: status === 'pending' || status === 'confirmed',
  }
}

/** Every evidence seq the proposals of a state quote (what the caller must read from the log). */
export function evidenceSeqsOf(state: SupervisorState): number[] {
  return [...new Set(state.proposals.flatMap((p) => p.proposal.evidenceSeqs))].sort((a, b) => a - b)
}

export function sessionView(session: SessionSummary, state: SupervisorState, events: ReadonlyMap<number, SessionEvent>): SessionView {
  const proposals = state.proposals.map((p) => proposalView(p, events)).reverse()
  const waiting = proposals.find((p) => p.awaitingDecision)
  return {
    session: { ...session },
    ...(state.current ? { current: taskDetailView(state.current, state.reviews, true) } : {}),
    history: state.history.map((task) => taskDetailView(task, state.reviews, false)).reverse(),
    proposals,
    ...(waiting ? { awaitingDecision: waiting.id } : {}),
    ...(state.poisoned ? { poisoned: { ...state.poisoned } } : {}),
  }
}

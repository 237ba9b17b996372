import { EventTypes, type SessionEvent } from '../events'
import { dependencyMap, readyNodes } from '../task/dag'
import { effectiveCycle, type Task } from '../task/types'
import { sourceLabel } from './proposal'
import type { ConfirmationReceipt, DeclineReceipt, ProposalStatus, RepairProposal, TrackedProposal } from './types'

/*
 * What the console and the agent are shown about repairs: proposals with their quoted evidence, the
 * default title of a user's proposal, and the follow-up turn after a reopen. Pure.
 */

/** Longest quoted evidence text (characters). */
export const EVIDENCE_QUOTE_MAX = 500
/** A user's proposal without a title takes this many characters of its reason. */
export const USER_TITLE_LENGTH = 80

export interface EvidenceQuote {
  seq: number
  type: string
  text: string
}

export interface TrackedProposalView {
  proposal: RepairProposal
  status: ProposalStatus
  sourceLabel: ReturnType<typeof sourceLabel>
  evidence: EvidenceQuote[]
  confirmation?: ConfirmationReceipt
  decline?: DeclineReceipt
}

function clip(text: string): string {
  return text.length > EVIDENCE_QUOTE_MAX ? `${text.slice(0, EVIDENCE_QUOTE_MAX - 1)}…` : text
}

/** The text of an evidence event: a message's text, or a tool result's name and result or error. */
export function quoteEvidence(event: SessionEvent): EvidenceQuote {
  const data = (event.data ?? {}) as Record<string, any>
  let text: string
  if (event.type === EventTypes.toolResult) {
    const body = data.error ? `error ${data.error.code}: ${data.error.message}` : JSON.stringify(data.result ?? null)
    text = `${data.name ?? 'tool'}: ${body}`
  } else {
    text = typeof data.text === 'string' ? data.text : JSON.stringify(data)
  }
  return { seq: event.seq, type: event.type, text: clip(text) }
}

/** One proposal as the console shows it; evidence events that cannot be found are left out. */
export function trackedProposalView(tracked: TrackedProposal, events: ReadonlyMap<number, SessionEvent>): TrackedProposalView {
  const view: TrackedProposalView = {
    proposal: tracked.proposal,
    status: tracked.status,
    sourceLabel: sourceLabel(tracked.proposal.source),
    evidence: tracked.proposal.evidenceSeqs.flatMap((seq) => {
      const event = events.get(seq)
      return event ? [quoteEvidence(event)] : []
    }),
  }
  if (tracked.confirmation) view.confirmation = tracked.confirmation
  if (tracked.decline) view.decline = tracked.decline
  return view
}

/** The title of a user's proposal that gave none: the first 80 characters of the reason. */
export function defaultTitle(reason: string): string {
  return reason.trim().slice(0, USER_TITLE_LENGTH).trim()
}

/** The controller's follow-up turn after a reopen: the cycle, the reason, the roots and the affected nodes. */
export function repairFollowup(task: Task, proposal: RepairProposal): string {
  const deps = task.plan ? dependencyMap(task.plan) : new Map<string, string[]>()
  const ready = readyNodes(task)
  const affected = proposal.affectedNodeIds.map((id) => {
    const upstream = (deps.get(id) ?? []).filter((d) => proposal.affectedNodeIds.includes(d))
    return upstream.length ? `${id} (after ${upstream.join(', ')})` : id
  })
  return [
    `Repair acceptance cycle ${effectiveCycle(task)} of task ${task.id}: ${proposal.title}.`,
    `Reason: ${proposal.reason}`,
    `Rework roots: ${proposal.rootNodeIds.join(', ')}. Affected nodes (each needs a new attempt and review): ${affected.join(', ')}.`,
    `Other nodes keep their acceptance. Start with ${ready.length ? ready.join(', ') : 'the ready nodes'} using task_start_node, `
      + 'report each with task_report_stage, then request completion again.',
  ].join('\n')
}

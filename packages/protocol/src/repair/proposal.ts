import { TaskwardError } from '../errors'
import { EventTypes, type SessionEvent } from '../events'
import { affectedNodes } from '../task/dag'
import type { Task } from '../task/types'
import { DIGEST_PATTERN, REASON_MAX, TITLE_MAX, canonicalProposal } from './records'
import type { RepairProposal, RepairSource, TrackedProposal, WorkspaceArtifact } from './types'

/*
 * Building and comparing repair proposals. A proposal grants nothing: it preserves completion and
 * waits for the user's confirmation click.
 */

/** Event types that may serve as repair evidence (main session only). */
export const EVIDENCE_EVENT_TYPES: readonly string[] = [EventTypes.toolResult, EventTypes.assistantMessage, EventTypes.userMessage]

/** How evidence events are looked up: a map by seq or a function. */
export type EvidenceLookup = ReadonlyMap<number, SessionEvent> | ((seq: number) => SessionEvent | undefined)

export interface ProposalInput {
  /** Supplied by the caller (no ids are generated here). */
  id: string
  /** The complete task the proposal targets (current or historical). */
  task: Task
  source?: RepairSource
  proposerSessionId?: string
  title: string
  reason: string
  rootNodeIds: readonly string[]
  evidenceSeqs: readonly number[]
  /** Main-session events, to check that every evidence seq names a real evidence event. */
  events: EvidenceLookup
  artifact: WorkspaceArtifact
  proposedAt: number
  /** The seq the proposal record will get; evidence must come before it. */
  proposedSeq: number
}

/** The fields that make two proposals the same request. */
export interface ProposalIdentity {
  taskId: string
  taskRevision: number
  digest: string
  title: string
  reason: string
  rootNodeIds: readonly string[]
  evidenceSeqs: readonly number[]
}

/**
 * Check evidence seqs: integers ≥ 0, each naming a main-session `tool/result`, `assistant/message` or
 * `user/message` event (and, with `before`, an event earlier than that seq). Returns them unique and
 * ascending; throws `REPAIR_EVIDENCE_INVALID` naming the first bad seq.
 */
export function validateEvidence(seqs: readonly number[], events: EvidenceLookup, before?: number): number[] {
  const lookup = typeof events === 'function' ? events : (seq: number) => events.get(seq)
  const unique = [...new Set(seqs)].sort((a, b) => a - b)
  for (const seq of unique) {
    const fail = (why: string) => new TaskwardError('REPAIR_EVIDENCE_INVALID',
      `Evidence seq ${seq} ${why}. Cite main-session tool results or messages (${EVIDENCE_EVENT_TYPES.join(', ')}); `
        + 'task_status lists the newest citable ones under `evidence`.', { seq })
    if (!Number.isSafeInteger(seq) || seq < 0) throw fail('is not a session event number')
    if (before !== undefined && seq >= before) throw fail('is not earlier than the proposal')
    const event = lookup(seq)
    if (!event) throw fail('does not exist in the main session')
    if (!EVIDENCE_EVENT_TYPES.includes(event.type)) throw fail(`is a ${event.type} event`)
  }
  return unique
}

function text(value: string, field: string, max: number): string {
  const trimmed = typeof value === 'string' ? value.trim() : ''
  if (!trimmed || trimmed.length > max) {
    throw new TaskwardError('BAD_REQUEST', `The repair ${field} must be 1 to ${max} characters after trimming.`, { field })
  }
  return trimmed
}

/**
 * Validate and build a proposal for a complete task. Refuses: task not complete → `TASK_NOT_COMPLETE`;
 * supervision off → `SUPERVISOR_DISABLED`; empty, duplicate or unknown roots → `INVALID_REPAIR_SCOPE`;
 * bad title/reason/artifact → `BAD_REQUEST`; bad evidence → `REPAIR_EVIDENCE_INVALID`.
 */
export function buildProposal(input: ProposalInput): RepairProposal {
  const { task } = input
  if (task.phase !== 'complete') {
    throw new TaskwardError('TASK_NOT_COMPLETE',
      `Task ${task.id} is ${task.phase}; repairs are proposed for complete tasks only. Use the task's own tools while it runs.`,
      { taskId: task.id, phase: task.phase })
  }
  if (!task.enabled) {
    throw new TaskwardError('SUPERVISOR_DISABLED', `Supervision of task ${task.id} is off; turn it on with /task on to propose a repair.`)
  }
  const roots = [...input.rootNodeIds]
  const scope = (why: string) => new TaskwardError('INVALID_REPAIR_SCOPE',
    `${why} Name one or more distinct node ids of task ${task.id}'s plan as roots.`, { rootNodeIds: roots })
  if (roots.length === 0) throw scope('The repair names no root nodes.')
  if (new Set(roots).size !== roots.length) throw scope('The repair names a root node twice.')
  const known = new Set(task.plan?.nodes.map((n) => n.id) ?? [])
  const unknown = roots.filter((id) => !known.has(id))
  if (unknown.length) throw scope(`Unknown root nodes: ${unknown.join(', ')}.`)
  const { artifact } = input
  if (!artifact || !artifact.workspaceKey || !DIGEST_PATTERN.test(artifact.digest)
    || !Number.isSafeInteger(artifact.files) || artifact.files < 0 || !Number.isSafeInteger(artifact.bytes) || artifact.bytes < 0) {
    throw new TaskwardError('BAD_REQUEST', 'The workspace stamp of the repair is malformed; stamp the workspace again.')
  }
  const proposal: RepairProposal = {
    id: input.id,
    taskId: task.id,
    taskRevision: task.revision,
    title: text(input.title, 'title', TITLE_MAX),
    reason: text(input.reason, 'reason', REASON_MAX),
    rootNodeIds: roots,
    affectedNodeIds: affectedNodes(task.plan!, roots),
    evidenceSeqs: validateEvidence(input.evidenceSeqs, input.events, input.proposedSeq),
    artifact,
    proposedAt: input.proposedAt,
    proposedSeq: input.proposedSeq,
  }
  if (input.source !== undefined) proposal.source = input.source
  if (input.proposerSessionId !== undefined) proposal.proposerSessionId = input.proposerSessionId
  return canonicalProposal(proposal)
}

function sameSet<T>(a: readonly T[], b: readonly T[]): boolean {
  const left = new Set(a)
  const right = new Set(b)
  return left.size === right.size && [...left].every((x) => right.has(x))
}

/** Whether `proposal` already asks for exactly `candidate` (order-insensitive on roots and evidence). */
export function sameProposal(proposal: RepairProposal, candidate: ProposalIdentity): boolean {
  return proposal.taskId === candidate.taskId
    && proposal.taskRevision === candidate.taskRevision
    && proposal.artifact.digest === candidate.digest
    && proposal.title === candidate.title.trim()
    && proposal.reason === candidate.reason.trim()
    && sameSet(proposal.rootNodeIds, candidate.rootNodeIds)
    && sameSet(proposal.evidenceSeqs, candidate.evidenceSeqs)
}

/** The identity of a built proposal, for `sameProposal`. */
export function proposalIdentity(p: RepairProposal): ProposalIdentity {
  return {
    taskId: p.taskId, taskRevision: p.taskRevision, digest: p.artifact.digest, title: p.title,
    reason: p.reason, rootNodeIds: p.rootNodeIds, evidenceSeqs: p.evidenceSeqs,
  }
}

/** The pending proposal identical to `candidate`, which a new request returns instead of writing one. */
export function findIdenticalPending(proposals: readonly TrackedProposal[], candidate: ProposalIdentity): TrackedProposal | undefined {
  return proposals.find((t) => t.status === 'pending' && sameProposal(t.proposal, candidate))
}

/** How the UI names a proposal's source; old records without one are not given an invented source. */
export function sourceLabel(source: RepairSource | undefined): 'main agent' | 'consultation' | 'user' | 'source not recorded' {
  switch (source) {
    case 'main-agent': return 'main agent'
    case 'consultation': return 'consultation'
    case 'user': return 'user'
    default: return 'source not recorded'
  }
}

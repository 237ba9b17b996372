import { isDeepStrictEqual } from 'node:util'
import { isRecordEnvelope, RECORD_EVENT_TYPE, type RecordEnvelope } from '../envelope'
import { isEnvelopeShape } from '../records/shape'
import type { SessionEvent } from '../events'
import { confirmedFor, markApplied, recordConfirm, recordDecline, recordProposal, supersedeStale } from '../repair/ledger'
import { canonicalConfirm, canonicalDecline, canonicalProposal, REPAIR_KINDS, REPAIR_NAMESPACE, repairReader } from '../repair/records'
import { reopenTask } from '../repair/reopen'
import type { RepairConfirm, RepairDecline, RepairProposal, TrackedProposal } from '../repair/types'
import { affectedNodes, samePlan } from './dag'
import { checkTaskInvariants } from './invariants'
import { readTaskState } from './reader'
import { REVIEW_NAMESPACE, reviewJobReader, type ReviewJob } from './review-job'
import { TASK_NAMESPACE } from './schemas'
import { isTerminal, type Task } from './types'

/*
 * The supervisor projection: a pure fold of the main session's log into current and historical tasks,
 * review jobs and repair proposals. It never mutates its input state; each call returns a new state
 * that shares unchanged parts with the old one, so states must be treated as immutable.
 *
 * Any record that cannot be read or breaks an invariant POISONS the projection: the failure is kept
 * (`Supervisor record at seq N: …`), every later event is ignored and execution is blocked until a
 * person acts. Rebuilding from the same events always yields a deep-equal state.
 */

/** Cache version of this projection; bumping it rebuilds every state from the log. */
export const SUPERVISOR_PROJECTION_VERSION = 12
export const SUPERVISOR_PROJECTION_KEY = 'dsh-task-supervisor'
export const REVIEW_WINDOW = 50

export interface SupervisorState {
  /** The session's task (live, or terminal until a new task replaces it). */
  current?: Task
  /** Terminal tasks replaced by a newer one, latest snapshot each, unique by id, oldest first. */
  history: Task[]
  /** The last `REVIEW_WINDOW` review jobs (latest record per job), oldest first. */
  reviews: ReviewJob[]
  /** The last 50 repair proposals with derived status, oldest first. */
  proposals: TrackedProposal[]
  poisoned?: { seq: number, message: string }
  /** Seq of the last event folded (-1 before any). */
  asOfSeq: number
}

export function initSupervisorState(): SupervisorState {
  return { history: [], reviews: [], proposals: [], asOfSeq: -1 }
}

const NAMESPACES = new Set([TASK_NAMESPACE, REVIEW_NAMESPACE, REPAIR_NAMESPACE])

/** The task with `id`, current or historical. */
export function findTask(state: SupervisorState, id: string): Task | undefined {
  return state.current?.id === id ? state.current : state.history.find((t) => t.id === id)
}

/** Fold one session event. Events that are not supervisor records are ignored. */
export function applySupervisorEvent(state: SupervisorState, event: SessionEvent): SupervisorState {
  const moved: SupervisorState = { ...state, asOfSeq: event.seq }
  if (!concernsSupervisor(state, event)) return moved
  const namespace = (event.data as RecordEnvelope).namespace
  try {
    if (!isEnvelopeShape(event.data) && !isRecordEnvelope(event.data)) throw new Error('the record envelope is malformed')
    const envelope = event.data as RecordEnvelope
    switch (namespace) {
      case TASK_NAMESPACE: return applyTask(moved, readTaskState(envelope, event.seq), event.seq)
      case REVIEW_NAMESPACE: return applyReview(moved, reviewJobReader.read<ReviewJob>(envelope, event.seq).payload)
      default: return applyRepair(moved, envelope, event.seq)
    }
  } catch (error) {
    // Kept without a final period: every refusal quotes it as one clause and ends the sentence itself.
    const message = (error instanceof Error ? error.message : String(error)).replace(/[.\s]+$/, '')
    return { ...moved, poisoned: { seq: event.seq, message: `Supervisor record at seq ${event.seq}: ${message}` } }
  }
}

/** The only event type the supervisor fold reads: every other event just moves `asOfSeq`. */
export const SUPERVISOR_EVENT_TYPES: readonly string[] = [RECORD_EVENT_TYPE]

/**
 * The state folded through `seq` when no event after its `asOfSeq` up to `seq` is of
 * `SUPERVISOR_EVENT_TYPES` (what a fold reading only those types does with the events it skips).
 */
export function supervisorStateThrough(state: SupervisorState, seq: number): SupervisorState {
  return seq <= state.asOfSeq ? state : { ...state, asOfSeq: seq }
}

/** Whether `event` can change anything but `asOfSeq` (a supervisor record on an unpoisoned state). */
function concernsSupervisor(state: SupervisorState, event: SessionEvent): boolean {
  if (state.poisoned || event.type !== RECORD_EVENT_TYPE) return false
  const namespace = (event.data as { namespace?: unknown } | null)?.namespace
  return typeof namespace === 'string' && NAMESPACES.has(namespace)
}

/**
 * Fold a whole log from an initial state (what a projection rebuild does). The same as applying
 * every event in turn, without a state copy for each event that only moves `asOfSeq`.
 */
export function foldSupervisorEvents(events: Iterable<SessionEvent>, state = initSupervisorState()): SupervisorState {
  let lastSeq = state.asOfSeq
  for (const event of events) {
    if (concernsSupervisor(state, event)) state = applySupervisorEvent(state, event)
    lastSeq = event.seq
  }
  return lastSeq === state.asOfSeq ? state : { ...state, asOfSeq: lastSeq }
}

function applyTask(state: SupervisorState, task: Task, seq: number): SupervisorState {
  const current = state.current
  // The previous snapshot's plan passed these checks when it was folded.
  checkTaskInvariants(task, !!current && current.id === task.id && !!task.plan && samePlan(current.plan, task.plan))
  if (current && current.id === task.id) {
    checkNextRevision(current, task)
    if (current.phase === 'complete') {
      if (isSupervisionSwitch(current, task)) {
        return { ...state, current: task, proposals: supersedeStale(state.proposals, task.id, task.revision, seq) }
      }
      return { ...acceptReopen(state, current, task, seq), current: task }
    }
    checkRepairFieldsKept(current, task)
    return { ...state, current: task }
  }
  const archived = state.history.find((t) => t.id === task.id)
  if (current && !isTerminal(current)) {
    throw new Error(`task ${task.id} cannot take over while task ${current.id} is ${current.phase}`)
  }
  if (archived) {
    // Historical reopen: the archived task returns and the current terminal task is archived.
    checkNextRevision(archived, task)
    if (archived.phase !== 'complete') throw new Error(`archived task ${archived.id} is ${archived.phase} and cannot change`)
    const accepted = acceptReopen(state, archived, task, seq)
    return { ...accepted, current: task, history: archive(state.history.filter((t) => t.id !== task.id), current) }
  }
  if (task.revision !== 1) throw new Error(`new task ${task.id} starts at revision ${task.revision}, not 1`)
  return { ...state, current: task, history: archive(state.history, current) }
}

function archive(history: Task[], task: Task | undefined): Task[] {
  return task ? [...history.filter((t) => t.id !== task.id), task] : history
}

function checkNextRevision(previous: Task, next: Task) {
  if (next.revision !== previous.revision + 1) {
    throw new Error(`task ${next.id} went from revision ${previous.revision} to ${next.revision}; revisions must be contiguous`)
  }
  if (previous.phase === 'cleared') throw new Error(`task ${next.id} was cleared and cannot change`)
}

/** Only a confirmed reopen writes the repair fields; every other transition carries them unchanged. */
function checkRepairFieldsKept(previous: Task, next: Task) {
  for (const field of ['acceptanceCycle', 'repairHistory', 'reopenedFromProposalId'] as const) {
    if (!isDeepStrictEqual(previous[field], next[field])) {
      throw new Error(`task ${next.id} changed ${field} outside a confirmed repair`)
    }
  }
}

/**
 * /task off | on of the current complete task: complete → complete where nothing but `enabled` (and
 * the revision, already checked) differs. Its new revision leaves earlier proposals stale.
 */
function isSupervisionSwitch(previous: Task, next: Task): boolean {
  return next.phase === 'complete' && next.enabled !== previous.enabled
    && isDeepStrictEqual({ ...next, enabled: previous.enabled, revision: previous.revision }, previous)
}

/** Accept complete → active only as the exact recomputed reopen of a confirmed proposal. */
function acceptReopen(state: SupervisorState, previous: Task, next: Task, seq: number): SupervisorState {
  if (next.phase !== 'active') {
    throw new Error(`complete task ${previous.id} changed to ${next.phase}${next.phase === 'complete' ? ' with more than supervision on/off' : ''}; `
      + 'a completed task changes only through a confirmed repair or /task off | on of the current task')
  }
  const tracked = confirmedFor(state.proposals, previous.id, previous.revision)
  if (!tracked) {
    throw new Error(`completed task ${previous.id} was reopened without a confirmed repair proposal for revision ${previous.revision}`)
  }
  const expected = reopenTask(previous, tracked.proposal, tracked.confirmation)
  if (!isDeepStrictEqual(expected, next)) {
    throw new Error(`completed task ${previous.id} reopening is not the exact transition of confirmed repair ${tracked.proposal.id}`)
  }
  return { ...state, proposals: markApplied(state.proposals, tracked.proposal.id, seq) }
}

/** `job` is the reader's output: already canonical (a fresh copy with known fields only). */
function applyReview(state: SupervisorState, job: ReviewJob): SupervisorState {
  if (job.status === 'finished' && !job.verdict) throw new Error(`review job ${job.jobId} finished without a verdict`)
  if (job.status !== 'finished' && job.verdict) throw new Error(`review job ${job.jobId} is ${job.status} but carries a verdict`)
  const index = state.reviews.findIndex((r) => r.jobId === job.jobId)
  if (index >= 0) {
    const reviews = [...state.reviews]
    reviews[index] = job
    return { ...state, reviews }
  }
  return { ...state, reviews: [...state.reviews, job].slice(-REVIEW_WINDOW) }
}

function applyRepair(state: SupervisorState, envelope: RecordEnvelope, seq: number): SupervisorState {
  const record = repairReader.read(envelope, seq)
  switch (record.kind) {
    case REPAIR_KINDS.proposal: {
      const proposal = canonicalProposal(record.payload as RepairProposal)
      if (record.recordId !== proposal.id) throw new Error(`repair proposal ${proposal.id} is stored under record id ${record.recordId}`)
      checkProposalTarget(state, proposal)
      return { ...state, proposals: recordProposal(state.proposals, proposal, seq) }
    }
    case REPAIR_KINDS.confirm:
      return { ...state, proposals: recordConfirm(state.proposals, canonicalConfirm(record.payload as RepairConfirm), seq) }
    default:
      return { ...state, proposals: recordDecline(state.proposals, canonicalDecline(record.payload as RepairDecline), seq) }
  }
}

/** A proposal must target a known complete task at its current revision, with the plan's impact. */
function checkProposalTarget(state: SupervisorState, proposal: RepairProposal) {
  const task = findTask(state, proposal.taskId)
  if (!task) throw new Error(`repair proposal ${proposal.id} targets unknown task ${proposal.taskId}`)
  if (task.phase !== 'complete' || task.revision !== proposal.taskRevision) {
    throw new Error(`repair proposal ${proposal.id} targets task ${task.id} revision ${proposal.taskRevision}, `
      + `but that task is ${task.phase} at revision ${task.revision}`)
  }
  if (new Set(proposal.rootNodeIds).size !== proposal.rootNodeIds.length) {
    throw new Error(`repair proposal ${proposal.id} names a root node twice`)
  }
  let impact: string[]
  try {
    impact = affectedNodes(task.plan!, proposal.rootNodeIds)
  } catch {
    throw new Error(`repair proposal ${proposal.id} names root nodes outside the plan`)
  }
  if (!isDeepStrictEqual(impact, proposal.affectedNodeIds)) {
    throw new Error(`repair proposal ${proposal.id} records an impact that differs from the plan (${impact.join(', ')})`)
  }
}

/** Whether the projection blocks execution (a poisoned log needs a person). */
export function isExecutionBlocked(state: SupervisorState): boolean {
  return state.poisoned !== undefined
}

import { RECORD_EVENT_TYPE, RecordEnvelope, isRecordEnvelope } from '../envelope'
import type { SessionEvent } from '../events'
import { AggregateVerdict, aggregateVerdict } from './verdict'
import { CheckSpec, validateCheckSpecs } from './checks'
import { JournalRecord, journalViolation } from './journal'
import { normalizePinnedFiles, pinnedSetDigest, type PinnedFile } from './pins'
import {
  AttemptPayload, DecisionPayload, RECOVERY_NAMESPACE, recoveryReader, RecoveryPayloads, RecoveryKind, type UnverifiedPayload,
} from './records'

/**
 * An agent attempt with its current evidence: the checks of its latest verification (the attempt
 * itself or its last rerun), the verdict over them, and whether its candidate was legal when recorded.
 */
export interface AttemptView extends AttemptPayload {
  seq: number
  verdict: AggregateVerdict
  /** Verification reruns recorded for this attempt. */
  reruns: number
  /** The candidate descends from the authoritative one (or none was authoritative yet). */
  legal: boolean
}

export interface RecoveryCounters {
  /** Agent attempts recorded (reruns excluded). */
  attempts: number
  /** Agent steps of every attempt plus one per rerun. */
  totalSteps: number
  /** Verification reruns over the whole task. */
  verifyReruns: number
  /** CHANGE_STRATEGY decisions recorded. */
  strategyChanges: number
}

export interface TaskRecovery {
  taskId: string
  attempts: AttemptView[]
  decisions: (DecisionPayload & { seq: number })[]
  counters: RecoveryCounters
  /** Seq of the last CHANGE_STRATEGY decision: stagnation is judged on the rounds after it. */
  strategySince?: number
  /** Agent requests (retry, strategy) and strategy proposals recorded; they change no decision. */
  agentRequests: number
  /** The checks a person set for this task (`checks` record), replacing the configured ones. */
  checks?: CheckSpec[]
  /** The latest stamp of the task's pinned files (`pins` record); absent before the first one. */
  pinBaseline?: PinBaseline
  /**
   * The latest background verification that gave up (`unverified` record), until a later attempt of
   * the task is recorded (that one verified the workspace as it was then); it changes no decision.
   */
  unverified?: UnverifiedPayload & { seq: number }
}

export interface PinBaseline {
  files: PinnedFile[]
  digest: string
  acceptanceCycle?: number
  seq: number
}

/** Everything the recovery controller knows, folded from the session's recovery records. */
export interface RecoveryState {
  tasks: Record<string, TaskRecovery>
  journal: JournalRecord[]
  /** The digest of the last committed promotion. */
  authoritative?: string
  /** The authoritative candidate and the legal candidates recorded on top of it since it was committed. */
  lineage: string[]
  /** Set when a record could not be read or broke the protocol; every later event is ignored. */
  poisoned?: { seq: number, message: string }
}

export function initRecoveryState(): RecoveryState {
  return { tasks: {}, journal: [], lineage: [] }
}

class Violation extends Error {}

function emptyTask(taskId: string): TaskRecovery {
  return { taskId, attempts: [], decisions: [], counters: { attempts: 0, totalSteps: 0, verifyReruns: 0, strategyChanges: 0 }, agentRequests: 0 }
}

function checkEvidence(payload: AttemptPayload) {
  const configured = new Set(payload.configuredChecks)
  if (configured.size !== payload.configuredChecks.length) throw new Violation(`attempt ${payload.attemptId} lists a configured check twice`)
  const seen = new Set<string>()
  for (const check of payload.checks) {
    if (!configured.has(check.checkId)) throw new Violation(`attempt ${payload.attemptId} has a result for unconfigured check "${check.checkId}"`)
    if (seen.has(check.checkId)) throw new Violation(`attempt ${payload.attemptId} has two results for check "${check.checkId}"`)
    seen.add(check.checkId)
  }
}

function isLegal(state: RecoveryState, payload: AttemptPayload): boolean {
  if (state.authoritative === undefined) return true
  if (state.lineage.includes(payload.candidate.digest)) return true
  return payload.parentCandidate !== undefined && state.lineage.includes(payload.parentCandidate)
}

function foldAttempt(state: RecoveryState, payload: AttemptPayload, seq: number): RecoveryState {
  checkEvidence(payload)
  const task = state.tasks[payload.taskId] ?? emptyTask(payload.taskId)
  const steps = Math.max(1, payload.steps ?? 1)
  const requests = payload.agentRequests?.length ?? 0
  const verdict = aggregateVerdict(payload.checks, payload.configuredChecks.length)
  if (payload.rerunOf !== undefined) {
    const last = task.attempts[task.attempts.length - 1]
    if (!last || last.attemptId !== payload.rerunOf) throw new Violation(`rerun ${payload.attemptId} is not of the task's latest attempt`)
    if (last.candidate.digest !== payload.candidate.digest || last.index !== payload.index) {
      throw new Violation(`rerun ${payload.attemptId} names another candidate or index than attempt ${last.attemptId}`)
    }
    const updated: AttemptView = {
      ...last, configuredChecks: payload.configuredChecks, checks: payload.checks, verdict, reruns: last.reruns + 1,
    }
    const counters = { ...task.counters, totalSteps: task.counters.totalSteps + steps, verifyReruns: task.counters.verifyReruns + 1 }
    return withTask(state, { ...task, attempts: [...task.attempts.slice(0, -1), updated], counters, agentRequests: task.agentRequests + requests })
  }
  if (Object.values(state.tasks).some((t) => t.attempts.some((a) => a.attemptId === payload.attemptId))) {
    throw new Violation(`attempt id ${payload.attemptId} is used twice`)
  }
  if (payload.index !== task.counters.attempts + 1) {
    throw new Violation(`attempt ${payload.attemptId} has index ${payload.index}, expected ${task.counters.attempts + 1}`)
  }
  const legal = isLegal(state, payload)
  const view: AttemptView = { ...payload, seq, verdict, reruns: 0, legal }
  const counters = { ...task.counters, attempts: task.counters.attempts + 1, totalSteps: task.counters.totalSteps + steps }
  // A new attempt verified the workspace as it is now: an earlier give-up (`unverified`) no longer
  // describes it. A rerun does not drop it (it re-verifies the older candidate).
  const { unverified: _stale, ...rest } = task
  const next = withTask(state, { ...rest, attempts: [...task.attempts, view], counters, agentRequests: task.agentRequests + requests })
  if (legal && !next.lineage.includes(payload.candidate.digest)) next.lineage = [...next.lineage, payload.candidate.digest]
  return next
}

function foldDecision(state: RecoveryState, payload: DecisionPayload, seq: number): RecoveryState {
  const task = state.tasks[payload.taskId]
  if (!task) throw new Violation(`decision ${payload.decisionId} is for task ${payload.taskId}, which has no attempt`)
  if (payload.attemptId !== undefined && !task.attempts.some((a) => a.attemptId === payload.attemptId)) {
    throw new Violation(`decision ${payload.decisionId} names unknown attempt ${payload.attemptId}`)
  }
  const changes = payload.action === 'CHANGE_STRATEGY'
  return withTask(state, {
    ...task,
    decisions: [...task.decisions, { ...payload, seq }],
    counters: changes ? { ...task.counters, strategyChanges: task.counters.strategyChanges + 1 } : task.counters,
    ...changes ? { strategySince: seq } : {},
  })
}

function foldJournal(state: RecoveryState, record: JournalRecord): RecoveryState {
  const violation = journalViolation(state.journal, record)
  if (violation) throw new Violation(violation)
  const next = { ...state, journal: [...state.journal, record] }
  if (record.kind === 'candidate' && record.payload.stage === 'committed') {
    next.authoritative = record.payload.digest
    // Legal candidates from now on descend from the new authoritative one.
    next.lineage = [record.payload.digest]
  }
  return next
}

function withTask(state: RecoveryState, task: TaskRecovery): RecoveryState {
  return { ...state, tasks: { ...state.tasks, [task.taskId]: task } }
}

function applyRecord<K extends RecoveryKind>(state: RecoveryState, kind: K, payload: RecoveryPayloads[K], seq: number): RecoveryState {
  switch (kind) {
    case 'attempt': return foldAttempt(state, payload as AttemptPayload, seq)
    case 'decision': return foldDecision(state, payload as DecisionPayload, seq)
    case 'candidate': return foldJournal(state, { kind: 'candidate', payload: payload as RecoveryPayloads['candidate'] })
    case 'receipt': return foldJournal(state, { kind: 'receipt', payload: payload as RecoveryPayloads['receipt'] })
    case 'strategy': {
      const { taskId } = payload as RecoveryPayloads['strategy']
      const task = state.tasks[taskId] ?? emptyTask(taskId)
      return withTask(state, { ...task, agentRequests: task.agentRequests + 1 })
    }
    case 'checks': {
      const { taskId, checks } = payload as RecoveryPayloads['checks']
      validateCheckSpecs(checks)
      const task = state.tasks[taskId] ?? emptyTask(taskId)
      return withTask(state, { ...task, checks: checks.map((check) => ({ ...check, argv: [...check.argv] })) })
    }
    case 'pins': {
      const { taskId, files, digest, acceptanceCycle } = payload as RecoveryPayloads['pins']
      const sorted = normalizePinnedFiles(files)
      if (pinnedSetDigest(sorted) !== digest) throw new Violation(`pins of task ${taskId} do not match their digest`)
      const task = state.tasks[taskId] ?? emptyTask(taskId)
      const pinBaseline: PinBaseline = { files: sorted.map((file) => ({ ...file })), digest, ...acceptanceCycle ? { acceptanceCycle } : {}, seq }
      return withTask(state, { ...task, pinBaseline })
    }
    case 'unverified': {
      const record = payload as RecoveryPayloads['unverified']
      const task = state.tasks[record.taskId] ?? emptyTask(record.taskId)
      return withTask(state, { ...task, unverified: { ...record, seq } })
    }
    default: throw new Violation(`unknown kind "${kind}"`)
  }
}

/**
 * Fold one session event into the recovery state. Pure: the input state is never modified. Events of
 * other types or namespaces pass through. A record that cannot be read, or that breaks the recovery
 * protocol (an attempt index gap, a journal stage out of order, ...), poisons the state: the failure is
 * kept with its seq and every later event is ignored until a person repairs the log.
 */
export function foldRecovery(state: RecoveryState, event: SessionEvent): RecoveryState {
  if (state.poisoned) return state
  if (event.type !== RECORD_EVENT_TYPE) return state
  const data = event.data as Partial<RecordEnvelope> | undefined
  if (!data || data.namespace !== RECOVERY_NAMESPACE) return state
  try {
    if (!isRecordEnvelope(data)) throw new Violation('not a record envelope')
    const record = recoveryReader.read(data, event.seq)
    return applyRecord(state, record.kind as RecoveryKind, record.payload, event.seq)
  } catch (error) {
    // Kept without a final period: every refusal quotes it as one clause and ends the sentence itself.
    const why = (error instanceof Error ? error.message : String(error)).replace(/[.\s]+$/, '')
    return { ...state, poisoned: { seq: event.seq, message: `Recovery record at seq ${event.seq}: ${why}` } }
  }
}

/** Fold a whole log from an initial state. */
export function foldRecoveryLog(events: Iterable<SessionEvent>, state: RecoveryState = initRecoveryState()): RecoveryState {
  let current = state
  for (const event of events) current = foldRecovery(current, event)
  return current
}

/** The task's latest agent attempt with its current evidence, if any. */
export function latestRecoveryAttempt(state: RecoveryState, taskId: string): AttemptView | undefined {
  const attempts = state.tasks[taskId]?.attempts
  return attempts?.[attempts.length - 1]
}

/*
 * Replaying a session log through today's projections (no I/O here): the supervisor fold, the repair
 * view and the recovery fold after every event, and every recorded recovery decision re-derived by
 * `decide` from the log alone. Used by tests/replay-golden.spec.ts (golden logs of earlier releases),
 * scripts/record-golden-logs.ts (which writes the expectations) and `npm run replay` (a stored session).
 */
import { createHash } from 'node:crypto'
import {
  applySupervisorEvent, decide, decisionPayload, foldRecovery, initRecoveryState, initSupervisorState, RECORD_EVENT_TYPE,
  RECOVERY_NAMESPACE, resolveBudgets, trackedProposalView,
  type DecisionPayload, type RecoveryState, type SessionEvent, type SupervisorState,
} from '@taskward/protocol'

/** JSON with object keys sorted, so equal values give equal text whatever the key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item) => {
    if (!item || typeof item !== 'object' || Array.isArray(item)) return item
    return Object.fromEntries(Object.keys(item).sort().map((key) => [key, (item as Record<string, unknown>)[key]]))
  })
}

export const digestOf = (value: unknown) => createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16)

/** The repair view of a supervisor state: every tracked proposal with the evidence it cites. */
export function repairView(state: SupervisorState, events: ReadonlyMap<number, SessionEvent>) {
  return {
    proposals: state.proposals.map((tracked) => trackedProposalView(tracked, events)),
    ...state.current ? { current: { taskId: state.current.id, revision: state.current.revision, phase: state.current.phase } } : {},
  }
}

/** The projections after one event: a short digest each (the full states are in `Replay.final`). */
export interface TimelineStep {
  seq: number
  supervisor: string
  repair: string
  recovery: string
}

/** A recorded recovery decision and the one `decide` derives today from the log before it. */
export interface DecisionCheck {
  seq: number
  decisionId: string
  recorded: string
  derived: string
}

export interface Replay {
  timeline: TimelineStep[]
  decisions: DecisionCheck[]
  final: { supervisor: SupervisorState, repair: ReturnType<typeof repairView>, recovery: RecoveryState }
}

const isRecovery = (event: SessionEvent, kind?: string) => event.type === RECORD_EVENT_TYPE
  && (event.data as { namespace?: string })?.namespace === RECOVERY_NAMESPACE && (!kind || (event.data as { kind?: string }).kind === kind)

/**
 * Re-derive one decision: the recovery state before the journal records the decision asked for, its
 * recorded budgets, its time. Completion is requested when the attempt claims `done` (the gate's
 * attempts); a progress attempt's decision (a budget or pin STOP) is decided without it, as recorded.
 * A decision `decide` refuses to make (it throws) is derived as that error.
 */
function rederive(beforeJournal: RecoveryState, recorded: DecisionPayload): string {
  try {
    const budgets = resolveBudgets(recorded.budgets ?? {})
    const decision = decide(beforeJournal, budgets, { taskId: recorded.taskId, at: recorded.decidedAt })
    return canonicalJson(decisionPayload(decision, recorded.decisionId, recorded.decidedAt, recorded.budgets ? budgets : undefined))
  } catch (error) {
    return `error: ${(error as Error).message}`
  }
}

/** Fold `events` (one session, seq order) through today's projections. */
export function replayEvents(events: readonly SessionEvent[]): Replay {
  let supervisor = initSupervisorState()
  let recovery = initRecoveryState()
  let beforeJournal = recovery
  const byseq = new Map<number, SessionEvent>()
  const timeline: TimelineStep[] = []
  const decisions: DecisionCheck[] = []
  for (const event of events) {
    byseq.set(event.seq, event)
    if (isRecovery(event, 'decision')) {
      const recorded = (event.data as { payload: DecisionPayload }).payload
      decisions.push({ seq: event.seq, decisionId: recorded.decisionId, recorded: canonicalJson(recorded), derived: rederive(beforeJournal, recorded) })
    }
    supervisor = applySupervisorEvent(supervisor, event)
    recovery = foldRecovery(recovery, event)
    if (!isRecovery(event, 'candidate') && !isRecovery(event, 'receipt')) beforeJournal = recovery
    timeline.push({ seq: event.seq, supervisor: digestOf(supervisor), repair: digestOf(repairView(supervisor, byseq)), recovery: digestOf(recovery) })
  }
  return { timeline, decisions, final: { supervisor, repair: repairView(supervisor, byseq), recovery } }
}

/** The first place two timelines differ: the seq and the projections that differ there. */
export function firstDivergence(expected: readonly TimelineStep[], actual: readonly TimelineStep[]): { seq: number, projections: string[] } | undefined {
  const length = Math.max(expected.length, actual.length)
  for (let i = 0; i < length; i++) {
    const want = expected[i]
    const got = actual[i]
    if (!want || !got) return { seq: (want ?? got)!.seq, projections: [want ? 'missing event' : 'extra event'] }
    if (want.seq !== got.seq) return { seq: Math.min(want.seq, got.seq), projections: ['seq'] }
    const differ = (['supervisor', 'repair', 'recovery'] as const).filter((key) => want[key] !== got[key])
    if (differ.length) return { seq: want.seq, projections: differ }
  }
  return undefined
}

/** Decisions whose re-derivation differs from the record. */
export function divergentDecisions(replay: Replay): DecisionCheck[] {
  return replay.decisions.filter((check) => check.recorded !== check.derived)
}

/** Parse a JSONL log (one `SessionEvent` a line). */
export function parseLog(text: string): SessionEvent[] {
  return text.split('\n').filter((line) => line.trim()).map((line, index) => {
    const event = JSON.parse(line) as SessionEvent
    if (typeof event.seq !== 'number' || typeof event.type !== 'string') throw new Error(`line ${index + 1} is not a session event`)
    return event
  })
}

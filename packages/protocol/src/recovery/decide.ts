import { TaskwardError } from '../errors'
import { Budgets, BudgetsSchema, BudgetsUsed } from './budgets'
import { ProgressDelta, progressDelta } from './delta'
import { JournalRecord, reconcileJournal } from './journal'
import { planPromotion } from './promotion'
import type { DecisionPayload, RecoveryAction } from './records'
import { detectIdentical, detectPingPong } from './stagnation'
import { AttemptView, RecoveryState, TaskRecovery } from './state'
import type { AggregateVerdict } from './verdict'

/**
 * Stable reason codes of decisions. Callers branch on `action` and `stopReason`; the reason says which
 * rule decided.
 */
export type DecisionReason =
  | 'CHECK_PIN_CHANGED' | 'CHECK_NOT_RUNNABLE' | 'CANDIDATE_NOT_DESCENDANT' | 'PASS_COMPLETION_REQUESTED' | 'VALIDATION_MISSING'
  | 'INCONCLUSIVE_RERUN' | 'INCONCLUSIVE_RERUNS_EXHAUSTED' | 'BUDGET_ATTEMPTS' | 'BUDGET_STEPS' | 'PASS_CONTINUE'
  | 'FAIL_FIRST_ATTEMPT' | 'FAIL_PROGRESS' | 'FAIL_NO_PROGRESS' | 'FAIL_STAGNATION_IDENTICAL' | 'FAIL_STAGNATION_PINGPONG'

/** `budget_exhausted:<which>` names the exhausted counter. */
export type StopReason = 'pin_changed' | 'unverified' | 'inconclusive' | 'stagnation' | 'non_retryable'
  | 'budget_exhausted:attempts' | 'budget_exhausted:steps'

export interface DecideInput {
  taskId: string
  /** Decision time; stamps the journal records the decision asks for. */
  at: number
  /** The supervisor is handling `task_request_completion`. An attempt whose `agentClaim` is `done` asks too. */
  completionRequested?: boolean
}

/**
 * What the controller decided about the task's latest attempt. `journal` lists the candidate-journal
 * records to append, in order, before acting on the decision: the reconciliation of an interrupted
 * promotion, then for COMPLETE the promotion of the candidate. On every other action the authoritative
 * candidate is unchanged and the attempt's candidate is left where it is (preserved, never promoted).
 */
export interface RecoveryDecision {
  taskId: string
  attemptId: string
  /** The candidate the decision is about. */
  candidate: string
  /** The authoritative candidate once `journal` is appended. */
  authoritative?: string
  action: RecoveryAction
  stopReason?: StopReason
  reason: DecisionReason
  verdict: AggregateVerdict
  delta: ProgressDelta
  budgetsUsed: BudgetsUsed
  journal: JournalRecord[]
}

/** The budgets with defaults filled in; invalid ones are `CONFIG_INVALID`. */
export function resolveBudgets(budgets: Partial<Budgets>): Budgets {
  try {
    return BudgetsSchema(budgets)
  } catch (error) {
    throw new TaskwardError('CONFIG_INVALID', `Recovery budgets are invalid: ${(error as Error).message}. Fix the recovery configuration.`)
  }
}

/** Legal agent attempts: the rounds progress and stagnation are judged on. */
function legalRounds(task: TaskRecovery): AttemptView[] {
  return task.attempts.filter((attempt) => attempt.legal)
}

/**
 * Decide, as a pure and deterministic function of the recorded attempts, decisions and journal and
 * of the budgets, what happens after the task's latest attempt. In order:
 * 0. a file a check trusts changed since the task's pin baseline → STOP pin_changed (never a pass);
 * 1. a check that cannot run (configuration) → STOP non_retryable;
 * 2. a candidate not descending from the authoritative one → REJECT_CANDIDATE (authoritative unchanged);
 * 3. PASS on this candidate with completion requested → COMPLETE (promoted through the journal);
 * 4. no checks configured → STOP unverified (MISSING is never a pass);
 * 5. INCONCLUSIVE → REVERIFY (no agent turn) up to `maxVerifyReruns`, then STOP inconclusive;
 * 6. attempts or steps exhausted → STOP budget_exhausted:<which>;
 * 7. PASS without a completion request → RETRY (the agent continues; a pass is not completion);
 * 8. FAIL (vetoes completion): ping-pong → stagnation; progress → RETRY; identical failures →
 *    stagnation; otherwise RETRY. Stagnation → CHANGE_STRATEGY while strategy changes remain, else STOP.
 * Agent requests (retry, strategy) are recorded evidence and are never read here.
 */
export function decide(state: RecoveryState, budgetsIn: Partial<Budgets>, input: DecideInput): RecoveryDecision {
  if (state.poisoned) {
    throw new TaskwardError('RECORD_UNSUPPORTED', `${state.poisoned.message}. Recovery is blocked until the session log is repaired.`, { seq: state.poisoned.seq })
  }
  const budgets = resolveBudgets(budgetsIn)
  const task = state.tasks[input.taskId]
  const current = task?.attempts[task.attempts.length - 1]
  if (!task || !current) {
    throw new TaskwardError('BAD_REQUEST', `Task ${input.taskId} has no recorded attempt. Run the checks on its candidate and record the attempt before asking for a decision.`, { taskId: input.taskId })
  }
  const rounds = legalRounds(task)
  const previous = [...rounds].reverse().find((round) => round.seq < current.seq)
  const reconciliation = reconcileJournal(state.journal, input.at)
  const base = {
    taskId: task.taskId,
    attemptId: current.attemptId,
    candidate: current.candidate.digest,
    ...reconciliation.authoritative ? { authoritative: reconciliation.authoritative } : {},
    verdict: current.verdict,
    delta: progressDelta(previous, current),
    budgetsUsed: {
      attempts: task.counters.attempts,
      totalSteps: task.counters.totalSteps,
      verifyReruns: current.reruns,
      strategyChanges: task.counters.strategyChanges,
    },
    journal: reconciliation.actions,
  }
  const go = (action: RecoveryAction, reason: DecisionReason): RecoveryDecision => ({ ...base, action, reason })
  const stop = (stopReason: StopReason, reason: DecisionReason): RecoveryDecision => ({ ...base, action: 'STOP', stopReason, reason })
  const stepsLeft = task.counters.totalSteps < budgets.maxTotalSteps

  if (current.checks.some((check) => check.reason === 'pin_changed')) return stop('pin_changed', 'CHECK_PIN_CHANGED')
  if (current.checks.some((check) => check.reason === 'not-runnable')) return stop('non_retryable', 'CHECK_NOT_RUNNABLE')
  if (!current.legal) return go('REJECT_CANDIDATE', 'CANDIDATE_NOT_DESCENDANT')
  const completionRequested = input.completionRequested === true || current.agentClaim === 'done'
  if (current.verdict === 'PASS' && completionRequested) {
    // Plan against the reconciled journal, so that an interrupted promotion is settled first.
    const settled: RecoveryState = { ...state, journal: [...state.journal, ...reconciliation.actions] }
    const promotion = planPromotion(settled, current.candidate.digest, input.at)
    return { ...go('COMPLETE', 'PASS_COMPLETION_REQUESTED'), authoritative: current.candidate.digest, journal: [...reconciliation.actions, ...promotion] }
  }
  if (current.verdict === 'MISSING') return stop('unverified', 'VALIDATION_MISSING')
  if (current.verdict === 'INCONCLUSIVE') {
    if (current.reruns >= budgets.maxVerifyReruns) return stop('inconclusive', 'INCONCLUSIVE_RERUNS_EXHAUSTED')
    return stepsLeft ? go('REVERIFY', 'INCONCLUSIVE_RERUN') : stop('budget_exhausted:steps', 'BUDGET_STEPS')
  }
  if (task.counters.attempts >= budgets.maxAttempts) return stop('budget_exhausted:attempts', 'BUDGET_ATTEMPTS')
  if (!stepsLeft) return stop('budget_exhausted:steps', 'BUDGET_STEPS')
  if (current.verdict === 'PASS') return go('RETRY', 'PASS_CONTINUE')

  if (!previous) return go('RETRY', 'FAIL_FIRST_ATTEMPT')
  const window = rounds.filter((round) => task.strategySince === undefined || round.seq > task.strategySince)
  const stagnated = (reason: DecisionReason): RecoveryDecision => task.counters.strategyChanges < budgets.maxStrategyChanges
    ? go('CHANGE_STRATEGY', reason)
    : stop('stagnation', reason)
  if (detectPingPong(window, budgets)) return stagnated('FAIL_STAGNATION_PINGPONG')
  if (base.delta.progress) return go('RETRY', 'FAIL_PROGRESS')
  if (detectIdentical(window, budgets)) return stagnated('FAIL_STAGNATION_IDENTICAL')
  return go('RETRY', 'FAIL_NO_PROGRESS')
}

/**
 * The payload of the `decision` record that records `decision`; `budgets` (resolved) records what it
 * was decided under, so a replay can re-decide under the same budgets or judge it under others.
 */
export function decisionPayload(decision: RecoveryDecision, decisionId: string, decidedAt: number, budgets?: Budgets): DecisionPayload {
  const { taskId, attemptId, verdict, delta, action, stopReason, reason, budgetsUsed } = decision
  return {
    decisionId, taskId, attemptId, verdict, delta, action, ...stopReason ? { stopReason } : {}, reason, budgetsUsed,
    ...budgets ? { budgets: { ...budgets } } : {}, decidedAt,
  }
}

/**
 * The STOPs a progress attempt (a stage report, a progress measurement) acts on at once: a used-up
 * budget, and a changed pin (the task must not go on under checks the agent may have rewritten).
 */
export function stopsAfterProgress(decision: Pick<RecoveryDecision, 'action' | 'stopReason'>): boolean {
  return isBudgetStop(decision) || (decision.action === 'STOP' && decision.stopReason === 'pin_changed')
}

/** A STOP because a budget (attempts, steps) is used up. */
export function isBudgetStop(decision: Pick<RecoveryDecision, 'action' | 'stopReason'>): boolean {
  return decision.action === 'STOP' && (decision.stopReason ?? '').startsWith('budget_exhausted:')
}

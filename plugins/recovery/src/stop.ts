import type { Session } from '@taskward/host'
import {
  budgetAtStop, exhaustedBudgetText, pause, RECORD_EVENT_TYPE, standingBudgetStop, TASK_NAMESPACE, TaskwardError,
  type Budgets, type BudgetsUsed, type DecisionPayload, type ErrorCode, type ExhaustedBudget, type PauseReason, type Task,
} from '@taskward/protocol'
import type { Recovery } from './service'

/** Phases a task can be paused from (the protocol's `pause` refuses the others). */
const PAUSABLE: readonly Task['phase'][] = ['planning', 'awaiting-approval', 'active', 'reviewing']

/** What names a STOP: its reason code, the rule's reason and what it had used. */
type StopFacts = Pick<DecisionPayload, 'reason' | 'stopReason'> & { budgetsUsed: BudgetsUsed }

/** Why a STOP pauses the task: `budget` for a used-up budget (resume is refused until it is raised), else `recovery`. */
export function stopPauseReason(decision: Pick<DecisionPayload, 'action' | 'stopReason'>): PauseReason {
  return decision.action === 'STOP' && decision.stopReason?.startsWith('budget_exhausted:') ? 'budget' : 'recovery'
}

/** The refusal code of a STOP, by its stop reason. */
export function stopCode(decision: StopFacts): ErrorCode {
  const reason = decision.stopReason ?? ''
  if (reason === 'unverified' || reason === 'inconclusive') return 'VALIDATION_MISSING'
  if (reason === 'non_retryable') return 'CONFIG_INVALID'
  if (reason === 'pin_changed') return 'CHECK_PINNED'
  // budget_exhausted:<which>, and stagnation with no strategy change left.
  return 'BUDGET_EXHAUSTED'
}

const STOP_ADVICE: Record<string, string> = {
  pin_changed: 'Files a check trusts (its pins) changed while the task ran, so no verdict on this candidate is trusted. Look at the change (the attempt record names the files); restore them, or accept them as they are with /task checks accept; then /task resume.',
  unverified: 'No checks are configured, so nothing verified this candidate and it is not complete. Set checks with /task checks <JSON> (or in the recovery configuration), then /task resume.',
  inconclusive: 'The checks stayed inconclusive after the allowed re-verifications. Look at the check output, fix the check or the host, then /task resume.',
  non_retryable: 'A check cannot be started (its program is missing or not executable); no agent turn can fix that. Fix the check configuration, then /task resume.',
  stagnation: 'The same failure keeps coming back and no strategy change is left. A person has to decide how to continue; /task resume after changing the approach or the budgets.',
}

/** What to do after a STOP, by its reason; a budget stop names the budget, its use and limit (under `budgets`). */
export function stopAdvice(decision: StopFacts, budgets: Partial<Budgets>): string {
  const reason = decision.stopReason ?? 'stopped'
  const exhausted = budgetAtStop(decision, budgets)
  if (exhausted) return `The task ${exhaustedBudgetText(exhausted)}`
  return STOP_ADVICE[reason] ?? `The ${reason.replace('budget_exhausted:', '')} budget is used up. The candidate is preserved, not completed; raise the budget or continue by hand, then /task resume.`
}

/** The message of a STOP, naming its reason. */
export function stopMessage(decision: StopFacts, budgets: Partial<Budgets>): string {
  return `Recovery stopped the task (${decision.stopReason ?? 'stopped'}, ${decision.reason}); it is paused. ${stopAdvice(decision, budgets)}`
}

/** The refusal of resuming a task whose budget STOP still stands (`BUDGET_EXHAUSTED`, naming the budget). */
export function budgetRefusal(taskId: string, exhausted: ExhaustedBudget, paused = true): TaskwardError {
  return new TaskwardError('BUDGET_EXHAUSTED', `Task ${taskId} ${paused ? 'stays paused' : 'is not resumed'}: ${exhaustedBudgetText(exhausted)}`, { taskId, ...exhausted })
}

/**
 * The resume guard: `/task resume` of a task whose latest recovery decision is a budget STOP is refused
 * while that budget, as configured now, is still used up — whichever way the task came to be paused.
 */
export async function resumeRefusal(recovery: Recovery, session: Session, task: Task): Promise<TaskwardError | undefined> {
  if (session.role !== 'main') return
  const exhausted = standingBudgetStop(await recovery.usable(session), task.id, recovery.config.budgets)
  return exhausted ? budgetRefusal(task.id, exhausted, task.phase === 'paused') : undefined
}

/**
 * Stop the main agent now: drop its queued turns and end the running one after its current step, so
 * it cannot keep changing the candidate a STOP preserves. Safe inside a gate (no supervisor transition).
 */
export function cancelMainAgent(recovery: Recovery, session: Session) {
  if (session.role === 'main') recovery.home.agents.get(session.id)?.cancel()
}

/**
 * What a STOP does: cancel the agent, pause the task (reason `stopPauseReason(decision)`) with the
 * candidate left as it is, disarm automatic continuation, and cancel again (a turn queued meanwhile is
 * dropped too). Must not run inside a completion gate or the recovery lock: it is a supervisor transition.
 */
export async function stopExecution(recovery: Recovery, session: Session, taskId: string, reason: PauseReason = 'recovery') {
  cancelMainAgent(recovery, session)
  const supervisor = recovery.home.supervisor
  await supervisor.apply(session, (current, at) => current && current.id === taskId && current.enabled && PAUSABLE.includes(current.phase)
    ? pause(current, { reason }, at)
    : current!)
  supervisor.controller.disarm(session.id)
  cancelMainAgent(recovery, session)
}

/**
 * A STOP decision and the pause that acts on it are two appends (the pause is a supervisor transition,
 * which cannot run inside the completion gate). A host killed between them restarts with the STOP in
 * the log and the task still running. `StopReplay` finds such a STOP — the current task's latest
 * decision is a STOP, the task is still in a pausable phase, and no state record of the task after
 * the decision shows it paused or ended (a reviewer's pass writes a task record between the gate's
 * STOP and the pause, still running) — and re-applies it before anything runs: on resume, before an agent step and before a
 * tool of the main session.
 */
export class StopReplay {
  /** Decisions (`<session>\0<decisionId>`) already known to have been acted on. */
  private readonly acted = new Set<string>()

  constructor(private recovery: Recovery) {}

  /** The current task and its STOP decision when that STOP has not been acted on. */
  async pending(session: Session): Promise<{ task: Task, decision: DecisionPayload & { seq: number } } | undefined> {
    if (session.role !== 'main') return
    const task = (await this.recovery.kernel.supervisor.state(session)).current
    if (!task || !task.enabled || !PAUSABLE.includes(task.phase)) return
    // Asked before every tool call and step: the in-memory fold when it is current (no cache write).
    const state = this.recovery.currentState(session) ?? await this.recovery.state(session)
    if (state.poisoned) return
    const decision = state.tasks[task.id]?.decisions.at(-1)
    if (decision?.action !== 'STOP') return
    const key = `${session.id}\0${decision.decisionId}`
    if (this.acted.has(key)) return
    for await (const event of session.events(decision.seq + 1)) {
      if (event.type === RECORD_EVENT_TYPE && event.data?.namespace === TASK_NAMESPACE && event.data.payload?.id === task.id
        && !PAUSABLE.includes(event.data.payload.phase)) {
        // The task was halted after the STOP (its pause; a person's later resume comes after that pause)
        // or ended. Any other task record — e.g. the vetoed completion review a reviewer's pass writes
        // right after the gate's STOP — leaves the task running and proves nothing.
        this.acted.add(key)
        return
      }
    }
    return { task, decision }
  }

  /**
   * Re-apply a STOP that was recorded but not acted on; the refusal to answer with when it did. A budget
   * STOP is answered as the resume guard answers the paused task (`BUDGET_EXHAUSTED` naming the budget as
   * configured now). When that budget has been raised since and `resuming` (`agent/before-resume`), the
   * pause is still recorded but nothing is refused: the caller (`/task resume`) then finds the task
   * paused and resumes it past the guard, exactly as when the pause had been recorded before the crash.
   */
  async replay(session: Session, resuming = false): Promise<TaskwardError | undefined> {
    const stop = await this.pending(session)
    if (!stop) return
    const { task, decision } = stop
    await stopExecution(this.recovery, session, task.id, stopPauseReason(decision))
    this.acted.add(`${session.id}\0${decision.decisionId}`)
    const lead = `Recovery stopped task ${task.id} (${decision.stopReason ?? 'stopped'}, ${decision.reason}) and its pause had not been recorded `
      + '(the host may have gone down in between): the task is paused now and nothing ran'
    const details = { taskId: task.id, decisionId: decision.decisionId, stopReason: decision.stopReason }
    if (stopPauseReason(decision) === 'budget') {
      const exhausted = standingBudgetStop(await this.recovery.usable(session), task.id, this.recovery.config.budgets)
      if (exhausted) return new TaskwardError('BUDGET_EXHAUSTED', `${lead}; ${exhaustedBudgetText(exhausted)}`, { ...details, ...exhausted })
      if (resuming) return
      return new TaskwardError(stopCode(decision), `${lead}. Its budget has been raised since: /task resume continues it.`, details)
    }
    return new TaskwardError(stopCode(decision), `${lead}. ${stopAdvice(decision, decision.budgets ?? this.recovery.config.budgets)}`, details)
  }
}

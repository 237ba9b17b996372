import type { Budgets, BudgetsUsed } from './budgets'
import { resolveBudgets } from './decide'
import type { RecoveryState } from './state'

/** A recovery budget a task has used up: which one, its configuration key, its limit and the task's use. */
export interface ExhaustedBudget {
  budget: 'attempts' | 'steps'
  /** The key under the recovery plugin's `budgets` that sets `limit`. */
  key: 'maxAttempts' | 'maxTotalSteps'
  limit: number
  used: number
}

/**
 * Whether a budget STOP of the task still stands: its latest decision is a budget STOP and, under
 * `budgets` as configured now, the recorded counters still reach a limit (attempts first, as `decide`
 * looks at them). Undefined when the task was not stopped for budget or the budget has been raised
 * since — then resuming it is the user's choice again; its next attempt is decided under the new limits.
 */
export function standingBudgetStop(state: RecoveryState, taskId: string, budgetsIn: Partial<Budgets>): ExhaustedBudget | undefined {
  const task = state.tasks[taskId]
  const last = task?.decisions.at(-1)
  if (!task || last?.action !== 'STOP' || !last.stopReason?.startsWith('budget_exhausted:')) return undefined
  const budgets = resolveBudgets(budgetsIn)
  if (task.counters.attempts >= budgets.maxAttempts) {
    return { budget: 'attempts', key: 'maxAttempts', limit: budgets.maxAttempts, used: task.counters.attempts }
  }
  if (task.counters.totalSteps >= budgets.maxTotalSteps) {
    return { budget: 'steps', key: 'maxTotalSteps', limit: budgets.maxTotalSteps, used: task.counters.totalSteps }
  }
  return undefined
}

/** What a person reads about an exhausted budget: which, its use and limit, and how to raise it. */
export function exhaustedBudgetText(exhausted: ExhaustedBudget): string {
  return `its ${exhausted.budget} budget is used up (${exhausted.used} of ${exhausted.limit}, recovery budgets.${exhausted.key}). `
    + `Raise budgets.${exhausted.key} in the recovery configuration (cordis.yml) above ${exhausted.used} and restart the host, then /task resume; `
    + 'the candidate is preserved, not completed.'
}

/**
 * The budget a STOP names, with what the decision had used (`budgetsUsed`) and the limit it was decided
 * under; undefined for a STOP that is not a budget stop.
 */
export function budgetAtStop(decision: { stopReason?: string, budgetsUsed: BudgetsUsed }, budgetsIn: Partial<Budgets>): ExhaustedBudget | undefined {
  const budgets = resolveBudgets(budgetsIn)
  if (decision.stopReason === 'budget_exhausted:attempts') {
    return { budget: 'attempts', key: 'maxAttempts', limit: budgets.maxAttempts, used: decision.budgetsUsed.attempts }
  }
  if (decision.stopReason === 'budget_exhausted:steps') {
    return { budget: 'steps', key: 'maxTotalSteps', limit: budgets.maxTotalSteps, used: decision.budgetsUsed.totalSteps }
  }
  return undefined
}

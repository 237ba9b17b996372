import Schema from 'schemastery'

/**
 * Bounds the recovery controller enforces on recorded counters (never on memory, so a restart or a
 * `/task resume` resets nothing). Defaults follow the reference designs (see recovery-anchors.md).
 */
export interface Budgets {
  /** Agent attempts per task (verification reruns are not attempts). */
  maxAttempts: number
  /** Recorded steps per task: agent steps of every attempt plus every verification rerun. */
  maxTotalSteps: number
  /** Re-runs of the checks on the same candidate while the outcome is inconclusive. */
  maxVerifyReruns: number
  /** Trailing failed rounds with identical failure signatures that count as stagnation. */
  stagnationIdenticalRounds: number
  /** Window of failed rounds with an unchanged failure count in which a recurring failure (A/B/A) is stagnation. */
  stagnationUnchangedRounds: number
  /** Strategy changes the controller may authorize per task before stagnation stops execution. */
  maxStrategyChanges: number
}

export const DEFAULT_BUDGETS: Readonly<Budgets> = Object.freeze({
  maxAttempts: 20,
  maxTotalSteps: 300,
  maxVerifyReruns: 5,
  stagnationIdenticalRounds: 2,
  stagnationUnchangedRounds: 3,
  maxStrategyChanges: 2,
})

export const BudgetsSchema: Schema<Partial<Budgets>, Budgets> = Schema.object({
  maxAttempts: Schema.natural().min(1).default(DEFAULT_BUDGETS.maxAttempts)
    .description('Agent attempts per task before execution stops with the candidate preserved.'),
  maxTotalSteps: Schema.natural().min(1).default(DEFAULT_BUDGETS.maxTotalSteps)
    .description('Recorded steps per task (agent steps and verification reruns).'),
  maxVerifyReruns: Schema.natural().default(DEFAULT_BUDGETS.maxVerifyReruns)
    .description('Re-runs of inconclusive checks on the same candidate before stopping.'),
  stagnationIdenticalRounds: Schema.natural().min(2).default(DEFAULT_BUDGETS.stagnationIdenticalRounds)
    .description('Trailing failed rounds with identical failures that mean stagnation.'),
  stagnationUnchangedRounds: Schema.natural().min(3).default(DEFAULT_BUDGETS.stagnationUnchangedRounds)
    .description('Window in which a recurring failure with an unchanged count (A/B/A) means stagnation.'),
  maxStrategyChanges: Schema.natural().default(DEFAULT_BUDGETS.maxStrategyChanges)
    .description('Strategy changes per task the controller may authorize on stagnation.'),
}) as Schema<Partial<Budgets>, Budgets>

/** What a decision has used so far, from recorded counters. */
export interface BudgetsUsed {
  attempts: number
  totalSteps: number
  /** Reruns of the current attempt's checks. */
  verifyReruns: number
  strategyChanges: number
}

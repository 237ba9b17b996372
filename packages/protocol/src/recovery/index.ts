/**
 * The evidence-driven recovery controller's pure core (DESIGN §8): checks and their results, failure
 * signatures, budgets, records and their reader, verdicts, progress deltas, stagnation, the candidate
 * journal, the fold of recovery records and the decision function.
 */
export * from './signature'
export * from './checks'
export * from './budgets'
export * from './records'
export * from './verdict'
export * from './delta'
export * from './stagnation'
export * from './journal'
export * from './state'
export * from './promotion'
export * from './decide'
export * from './veto'
export * from './signal'
export * from './candidate'
export * from './pins'
export * from './exhausted'
export * from './check-path'
export * from './settle'

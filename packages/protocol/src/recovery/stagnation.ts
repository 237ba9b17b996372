import type { Budgets } from './budgets'
import { failureSet } from './delta'
import type { AttemptView } from './state'

/**
 * Stagnation across rounds, judged only on objective evidence (failure signatures), never on text.
 * - `identical`: the last `stagnationIdenticalRounds` rounds all failed with the same failure set.
 *   A no-op attempt (same candidate, same failure) is such a round.
 * - `pingpong`: in the last `stagnationUnchangedRounds` rounds every round failed with the same number
 *   of failures and the latest failure set already occurred two or more rounds ago (A/B/A): the
 *   "changes" only return to an earlier state.
 * Rounds whose failures keep changing (edit, then test, with a new failure each time) never match.
 */
export type Stagnation = 'identical' | 'pingpong'

function fingerprint(round: AttemptView): string {
  return failureSet(round.checks).join(',')
}

function failingCount(round: AttemptView): number {
  return failureSet(round.checks).length
}

export function detectPingPong(rounds: readonly AttemptView[], budgets: Pick<Budgets, 'stagnationUnchangedRounds'>): boolean {
  const window = rounds.slice(-budgets.stagnationUnchangedRounds)
  if (window.length < budgets.stagnationUnchangedRounds || window.length < 3) return false
  if (window.some((round) => round.verdict !== 'FAIL')) return false
  const count = failingCount(window[0])
  if (window.some((round) => failingCount(round) !== count)) return false
  const latest = fingerprint(window[window.length - 1])
  // A repeat of the previous round is the identical rule's business; ping-pong is a return (A/B/A).
  if (fingerprint(window[window.length - 2]) === latest) return false
  return window.slice(0, -2).some((round) => fingerprint(round) === latest)
}

export function detectIdentical(rounds: readonly AttemptView[], budgets: Pick<Budgets, 'stagnationIdenticalRounds'>): boolean {
  const trailing = rounds.slice(-budgets.stagnationIdenticalRounds)
  if (trailing.length < Math.max(2, budgets.stagnationIdenticalRounds)) return false
  if (trailing.some((round) => round.verdict !== 'FAIL')) return false
  const first = fingerprint(trailing[0])
  return trailing.every((round) => fingerprint(round) === first)
}

import type { CheckResult } from './checks'

/**
 * The verdict over one candidate. `MISSING` (no checks configured) is its own outcome and never a
 * pass; `INCONCLUSIVE` (a check could not decide, or a configured check has no result) is not a pass
 * either; any `FAIL` dominates.
 */
export type AggregateVerdict = 'PASS' | 'FAIL' | 'INCONCLUSIVE' | 'MISSING'

export function aggregateVerdict(checks: readonly CheckResult[], configuredCount: number): AggregateVerdict {
  if (configuredCount <= 0) return 'MISSING'
  if (checks.some((check) => check.verdict === 'FAIL')) return 'FAIL'
  if (checks.some((check) => check.verdict === 'INCONCLUSIVE')) return 'INCONCLUSIVE'
  // A configured check that produced no result proves nothing: incomplete evidence is not a pass.
  const passed = new Set(checks.filter((check) => check.verdict === 'PASS').map((check) => check.checkId))
  return passed.size >= configuredCount ? 'PASS' : 'INCONCLUSIVE'
}

import type { CheckResult } from './checks'
import { failureSignature } from './signature'

/** The evidence an attempt is compared on: its candidate and its check results. Never task text. */
export interface AttemptEvidence {
  candidate: { digest: string }
  checks: readonly CheckResult[]
}

/**
 * Objective change between two attempts. `newPass`: checks that pass now and did not before;
 * `regression`: checks that passed before and fail now; `changedFailure`: the set of failure
 * signatures differs; `candidateChanged`: the candidate digest differs.
 * `progress` ⇔ (newPass ≠ ∅ ∧ regression = ∅) ∨ (changedFailure ∧ candidateChanged).
 */
export interface ProgressDelta {
  newPass: string[]
  changedFailure: boolean
  regression: string[]
  candidateChanged: boolean
  progress: boolean
}

/** The identity of one failure: its recorded signature, or the signature of empty output if none was recorded. */
export function failureKey(check: CheckResult): string {
  return check.signature ?? failureSignature(check.checkId, '')
}

/** Sorted, de-duplicated failure keys of an attempt's failing checks. */
export function failureSet(checks: readonly CheckResult[]): string[] {
  return [...new Set(checks.filter((check) => check.verdict === 'FAIL').map(failureKey))].sort()
}

function idsWith(checks: readonly CheckResult[], verdict: CheckResult['verdict']): Set<string> {
  return new Set(checks.filter((check) => check.verdict === verdict).map((check) => check.checkId))
}

/** Without a previous attempt, everything is new evidence: every pass is new and any failure is a change. */
export function progressDelta(previous: AttemptEvidence | undefined, attempt: AttemptEvidence): ProgressDelta {
  const passNow = idsWith(attempt.checks, 'PASS')
  const failNow = idsWith(attempt.checks, 'FAIL')
  const passBefore = previous ? idsWith(previous.checks, 'PASS') : new Set<string>()
  const newPass = [...passNow].filter((id) => !passBefore.has(id)).sort()
  const regression = [...failNow].filter((id) => passBefore.has(id)).sort()
  const failuresNow = failureSet(attempt.checks)
  const failuresBefore = previous ? failureSet(previous.checks) : []
  const changedFailure = failuresNow.length !== failuresBefore.length
    || failuresNow.some((key, i) => key !== failuresBefore[i])
  const candidateChanged = !previous || previous.candidate.digest !== attempt.candidate.digest
  const progress = (newPass.length > 0 && regression.length === 0) || (changedFailure && candidateChanged)
  return { newPass, changedFailure, regression, candidateChanged, progress }
}

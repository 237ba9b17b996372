import { TaskwardError } from '../errors'
import { latestRecoveryAttempt, RecoveryState } from './state'

/**
 * Why the supervisor must refuse `task_request_completion` for a task, or undefined when the latest
 * verification passed on exactly the current candidate. A failure vetoes (`VERDICT_NEGATIVE`); no
 * checks, no attempt, inconclusive checks or evidence about another candidate are not a pass
 * (`VALIDATION_MISSING`); a candidate not descending from the authoritative one is `CANDIDATE_ILLEGAL`.
 * `candidate` is the digest the controller reads now; without it the latest attempt's is used.
 */
export function completionVeto(state: RecoveryState, taskId: string, candidate?: string): TaskwardError | undefined {
  if (state.poisoned) {
    return new TaskwardError('RECORD_UNSUPPORTED', `${state.poisoned.message}. Completion is blocked until the session log is repaired.`, { seq: state.poisoned.seq })
  }
  const attempt = latestRecoveryAttempt(state, taskId)
  if (!attempt) {
    return new TaskwardError('VALIDATION_MISSING', `No checks have run for task ${taskId}. Let the controller verify the candidate before requesting completion.`, { taskId })
  }
  const details = { taskId, attemptId: attempt.attemptId, candidate: attempt.candidate.digest, verdict: attempt.verdict }
  if (candidate !== undefined && candidate !== attempt.candidate.digest) {
    return new TaskwardError('VALIDATION_MISSING', `The checks ran on candidate ${attempt.candidate.digest}, not on the current candidate ${candidate}. Let the controller verify the current candidate first.`, { ...details, current: candidate })
  }
  if (!attempt.legal) {
    return new TaskwardError('CANDIDATE_ILLEGAL', `Candidate ${attempt.candidate.digest} does not descend from the authoritative candidate. Restore it and redo the change on top of it.`, details)
  }
  switch (attempt.verdict) {
    case 'FAIL': {
      const failing = attempt.checks.filter((check) => check.verdict === 'FAIL').map((check) => check.checkId)
      return new TaskwardError('VERDICT_NEGATIVE', `Checks failed on this candidate: ${failing.join(', ')}. Fix the failures; completion is refused while a check fails.`, { ...details, failing })
    }
    case 'MISSING':
      return new TaskwardError('VALIDATION_MISSING', 'No checks are configured, so nothing verified this candidate. Configure recovery checks or ask a person to review; unverified work is not complete.', details)
    case 'INCONCLUSIVE':
      return new TaskwardError('VALIDATION_MISSING', 'The checks were inconclusive on this candidate. Wait for the controller to re-verify it; an inconclusive result is not a pass.', details)
    default:
      return undefined
  }
}

import type { ProgressSignal } from '../task/progress'
import type { ProgressDelta } from './delta'

/** Put a progress delta into words for the supervisor's progress signal (never uses task text). */
export function progressSignalOf(delta: ProgressDelta): ProgressSignal {
  const parts: string[] = []
  if (delta.newPass.length) parts.push(`newly passing: ${delta.newPass.join(', ')}`)
  if (delta.regression.length) parts.push(`regressed: ${delta.regression.join(', ')}`)
  if (delta.changedFailure) parts.push('the failures changed')
  parts.push(delta.candidateChanged ? 'the candidate changed' : 'the candidate is unchanged')
  return { progress: delta.progress, evidence: parts.join('; ') }
}

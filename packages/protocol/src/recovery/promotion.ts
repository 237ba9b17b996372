import { TaskwardError } from '../errors'
import { JournalRecord, nextJournalId, promotionRecords, reconcileJournal } from './journal'
import type { RecoveryState } from './state'

/**
 * The ordered journal records that make `digest` the authoritative candidate (proposed, verified,
 * committed, receipt), stamped `at`. Nothing when it already is authoritative. Refused while a promotion
 * is unfinished (`CANDIDATE_ILLEGAL`: reconcile first), for a candidate that does not descend from the
 * authoritative one (`CANDIDATE_ILLEGAL`) and for a candidate whose latest verification did not pass
 * (`VALIDATION_MISSING`).
 */
export function planPromotion(state: RecoveryState, digest: string, at: number): JournalRecord[] {
  if (state.poisoned) {
    throw new TaskwardError('RECORD_UNSUPPORTED', `${state.poisoned.message}. Repair the session log before promoting a candidate.`, { seq: state.poisoned.seq })
  }
  const reconciliation = reconcileJournal(state.journal, at)
  if (reconciliation.pending) {
    throw new TaskwardError('CANDIDATE_ILLEGAL',
      `Promotion ${reconciliation.pending.journalId} is unfinished. Append the records of reconcileJournal first, then promote.`,
      { journalId: reconciliation.pending.journalId })
  }
  if (digest === state.authoritative) return []
  const verified = Object.values(state.tasks).flatMap((task) => task.attempts)
    .filter((attempt) => attempt.candidate.digest === digest)
  const legal = verified.filter((attempt) => attempt.legal)
  if (verified.length > 0 && legal.length === 0) {
    throw new TaskwardError('CANDIDATE_ILLEGAL',
      `Candidate ${digest} does not descend from the authoritative candidate ${state.authoritative}. Restore the authoritative candidate and redo the change on top of it.`,
      { digest, authoritative: state.authoritative })
  }
  // The latest verification of this candidate decides: an older pass does not outvote a newer failure.
  const latest = legal.sort((a, b) => a.seq - b.seq)[legal.length - 1]
  if (!latest || latest.verdict !== 'PASS') {
    throw new TaskwardError('VALIDATION_MISSING',
      `Candidate ${digest} has no passing verification. Run the configured checks on it before promoting it.`, { digest })
  }
  return promotionRecords(nextJournalId(state.journal), digest, state.authoritative, at, latest.attemptId)
}

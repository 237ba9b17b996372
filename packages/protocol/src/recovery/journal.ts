import type { CandidatePayload, ReceiptPayload } from './records'

/** A candidate-journal record as it is appended: a `candidate` stage or a `receipt`. */
export type JournalRecord =
  | { kind: 'candidate', payload: CandidatePayload }
  | { kind: 'receipt', payload: ReceiptPayload }

/** One promotion as the journal tells it. */
export interface JournalSummary {
  journalId: string
  digest: string
  parent?: string
  attemptId?: string
  stage: CandidatePayload['stage']
  receipt: boolean
}

/** A promotion that started and did not finish. */
export interface PendingJournal {
  journalId: string
  stage: 'proposed' | 'verified' | 'committed'
  digest: string
}

export interface Reconciliation {
  /** The one authoritative candidate: the digest of the last committed promotion. */
  authoritative?: string
  pending?: PendingJournal
  /** Records to append, in order, to finish (receipt) or roll back every unfinished promotion. */
  actions: JournalRecord[]
}

const NEXT_STAGE: Record<string, CandidatePayload['stage'][]> = {
  proposed: ['verified', 'rolled-back'],
  verified: ['committed', 'rolled-back'],
  committed: [],
  'rolled-back': [],
}

/** Promotions in order of their first record, with their latest stage. */
export function summarizeJournal(records: readonly JournalRecord[]): JournalSummary[] {
  const byId = new Map<string, JournalSummary>()
  for (const record of records) {
    const known = byId.get(record.payload.journalId)
    if (record.kind === 'receipt') {
      if (known) known.receipt = true
      continue
    }
    const { journalId, stage, digest, parent, attemptId } = record.payload
    if (!known) {
      byId.set(journalId, { journalId, digest, stage, receipt: false, ...parent ? { parent } : {}, ...attemptId ? { attemptId } : {} })
    } else {
      known.stage = stage
    }
  }
  return [...byId.values()]
}

/** Whether a promotion is still open: proposed or verified, or committed without its receipt. */
export function isJournalOpen(summary: JournalSummary): boolean {
  return summary.stage === 'proposed' || summary.stage === 'verified' || (summary.stage === 'committed' && !summary.receipt)
}

/**
 * Why `record` may not follow `records` in a well-formed journal, or undefined when it may. A
 * well-formed journal has at most one open promotion, whose stages advance proposed → verified →
 * committed (or → rolled-back) on one digest, proposed on top of the authoritative candidate, and
 * exactly one receipt per commit.
 */
export function journalViolation(records: readonly JournalRecord[], record: JournalRecord): string | undefined {
  const summaries = summarizeJournal(records)
  const known = summaries.find((summary) => summary.journalId === record.payload.journalId)
  const authoritative = authoritativeOf(summaries)
  if (record.kind === 'receipt') {
    if (!known || known.stage !== 'committed') return `receipt for journal ${record.payload.journalId}, which is not committed`
    if (known.receipt) return `second receipt for journal ${known.journalId}`
    if (record.payload.digest !== known.digest) return `receipt digest differs from journal ${known.journalId}`
    if (record.payload.previous !== known.parent) return `receipt of journal ${known.journalId} names another previous candidate`
    return undefined
  }
  const { stage, digest } = record.payload
  if (!known) {
    if (stage !== 'proposed') return `journal ${record.payload.journalId} starts at "${stage}" instead of "proposed"`
    const open = summaries.find(isJournalOpen)
    if (open) return `journal ${record.payload.journalId} proposed while journal ${open.journalId} is unfinished; reconcile first`
    if (record.payload.parent !== authoritative) return `journal ${record.payload.journalId} is not proposed on top of the authoritative candidate`
    return undefined
  }
  if (!NEXT_STAGE[known.stage].includes(stage)) return `journal ${known.journalId} cannot go from "${known.stage}" to "${stage}"`
  if (digest !== known.digest) return `journal ${known.journalId} changes its digest at "${stage}"`
  return undefined
}

function authoritativeOf(summaries: readonly JournalSummary[]): string | undefined {
  let authoritative: string | undefined
  for (const summary of summaries) if (summary.stage === 'committed') authoritative = summary.digest
  return authoritative
}

/**
 * Finish or roll back what a crash interrupted. A promotion that stopped at `proposed` or `verified`
 * never changed the authoritative candidate, so it is rolled back; one that reached `committed`
 * stands and gets its receipt. Afterwards exactly one candidate is authoritative, with its receipts.
 * `at` stamps the records to append.
 */
export function reconcileJournal(records: readonly JournalRecord[], at: number): Reconciliation {
  const summaries = summarizeJournal(records)
  const actions: JournalRecord[] = []
  let pending: PendingJournal | undefined
  for (const summary of summaries) {
    if (!isJournalOpen(summary)) continue
    pending ??= { journalId: summary.journalId, stage: summary.stage as PendingJournal['stage'], digest: summary.digest }
    if (summary.stage === 'committed') {
      actions.push({ kind: 'receipt', payload: { journalId: summary.journalId, digest: summary.digest, ...summary.parent ? { previous: summary.parent } : {}, at } })
    } else {
      actions.push({ kind: 'candidate', payload: {
        journalId: summary.journalId, stage: 'rolled-back', digest: summary.digest,
        ...summary.parent ? { parent: summary.parent } : {}, ...summary.attemptId ? { attemptId: summary.attemptId } : {}, at,
      } })
    }
  }
  const authoritative = authoritativeOf(summaries)
  return { ...authoritative ? { authoritative } : {}, ...pending ? { pending } : {}, actions }
}

/** A journal id not used yet: `candidate-<n>` with n one past the number of promotions. */
export function nextJournalId(records: readonly JournalRecord[]): string {
  const used = new Set(records.map((record) => record.payload.journalId))
  let n = summarizeJournal(records).length + 1
  while (used.has(`candidate-${n}`)) n++
  return `candidate-${n}`
}

/**
 * The records of one promotion, in order: `proposed` (the intent, persisted before any effect),
 * `verified` (the controller read back the candidate; for git, after moving the ref), `committed`
 * (the authoritative candidate changes here) and the receipt. Checks are the caller's (`planPromotion`).
 */
export function promotionRecords(journalId: string, digest: string, parent: string | undefined, at: number, attemptId?: string): JournalRecord[] {
  const common = { journalId, digest, ...parent ? { parent } : {}, ...attemptId ? { attemptId } : {}, at }
  return [
    { kind: 'candidate', payload: { ...common, stage: 'proposed' } },
    { kind: 'candidate', payload: { ...common, stage: 'verified' } },
    { kind: 'candidate', payload: { ...common, stage: 'committed' } },
    { kind: 'receipt', payload: { journalId, digest, ...parent ? { previous: parent } : {}, at } },
  ]
}

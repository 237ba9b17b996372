import type { SessionEvent } from '../events'
import { EVIDENCE_EVENT_TYPES } from './proposal'
import { quoteEvidence, type EvidenceQuote } from './view'

/*
 * The main-session events a repair proposal can cite, as task_status lists them while the task is
 * complete: the agent cites evidence by seq, and on a host whose model sees no seqs in its
 * transcript (DSH) this list is the only place it learns them. Pure.
 */

/** How many citable events are listed (the newest). */
export const CITABLE_EVIDENCE_LIMIT = 20
/** Longest quote in the list (characters); the console quotes up to EVIDENCE_QUOTE_MAX. */
export const CITABLE_QUOTE_MAX = 200

/** Results of these tools say nothing about a defect, and agents call task_status at every step. */
const UNQUOTED_TOOLS: readonly string[] = ['task_status']

/** The newest `limit` citable events of `events` (in log order), each `{seq, type, text}`. */
export function citableEvidence(events: readonly SessionEvent[], limit = CITABLE_EVIDENCE_LIMIT): EvidenceQuote[] {
  const citable = events.filter((event) => EVIDENCE_EVENT_TYPES.includes(event.type)
    && !(event.type === 'tool/result' && UNQUOTED_TOOLS.includes((event.data as { name?: string } | undefined)?.name ?? '')))
  return citable.slice(-limit).map((event) => {
    const quote = quoteEvidence(event)
    return quote.text.length > CITABLE_QUOTE_MAX ? { ...quote, text: `${quote.text.slice(0, CITABLE_QUOTE_MAX - 1)}…` } : quote
  })
}

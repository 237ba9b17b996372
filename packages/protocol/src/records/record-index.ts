import { RECORD_EVENT_TYPE } from '../envelope'
import type { SessionEvent } from '../events'

/** One `(namespace, schemaVersion)` pair present in a session, with the first seq that holds it. */
export interface RecordPair {
  namespace: string
  schemaVersion: number
  firstSeq: number
}

/**
 * Which `(namespace, schemaVersion)` pairs a session's records use, folded from its log. Small (one
 * entry per pair, not per record) and JSON-safe, so it can live in a projection cache. `lastSeq` is the
 * last event folded in (-1 for none); `malformedSeq` the first `extension/record` whose data is not an
 * envelope at all (no string namespace or integer version), which no reader could ever read.
 */
export interface RecordIndex {
  lastSeq: number
  pairs: Record<string, RecordPair>
  malformedSeq?: number
}

export function emptyRecordIndex(): RecordIndex {
  return { lastSeq: -1, pairs: {} }
}

function pairKey(namespace: string, schemaVersion: number) {
  return `${namespace}@${schemaVersion}`
}

/**
 * Fold one event into the index. Pure and copy-on-write: the input is never mutated, and the pair map
 * is copied only when a new pair appears, so folding 100,000 events allocates next to nothing.
 */
export function indexRecordEvent(index: RecordIndex, event: SessionEvent): RecordIndex {
  if (event.seq <= index.lastSeq) return index
  const next: RecordIndex = { ...index, lastSeq: event.seq }
  if (event.type !== RECORD_EVENT_TYPE) return next
  const data = event.data as { namespace?: unknown, schemaVersion?: unknown } | null
  if (!data || typeof data.namespace !== 'string' || !Number.isSafeInteger(data.schemaVersion)) {
    if (next.malformedSeq === undefined) next.malformedSeq = event.seq
    return next
  }
  const namespace = data.namespace
  const schemaVersion = data.schemaVersion as number
  const key = pairKey(namespace, schemaVersion)
  if (!index.pairs[key]) next.pairs = { ...index.pairs, [key]: { namespace, schemaVersion, firstSeq: event.seq } }
  return next
}

/** Fold a whole log (or a slice of it) into an index. */
export function indexRecordEvents(events: Iterable<SessionEvent>, index: RecordIndex = emptyRecordIndex()): RecordIndex {
  for (const event of events) index = indexRecordEvent(index, event)
  return index
}

/** The pairs of an index, ordered by namespace, then version. */
export function recordPairs(index: RecordIndex): RecordPair[] {
  return Object.values(index.pairs).sort((a, b) =>
    a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.schemaVersion - b.schemaVersion)
}

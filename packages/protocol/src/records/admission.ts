import { TaskwardError } from '../errors'
import type { RecordReader } from './reader'
import type { RecordPair } from './record-index'

/** `dsh-task-supervisor v10`: how a pair is named to people. */
export function pairLabel(pair: Pick<RecordPair, 'namespace' | 'schemaVersion'>) {
  return `${pair.namespace} v${pair.schemaVersion}`
}

/** The pairs that no reader reads (same namespace and the version within its range). */
export function missingReaders<P extends Pick<RecordPair, 'namespace' | 'schemaVersion'>>(
  pairs: Iterable<P>, readers: Iterable<RecordReader>,
): P[] {
  const list = [...readers]
  const missing: P[] = []
  for (const pair of pairs) {
    if (!list.some((reader) => reader.namespace === pair.namespace && reader.reads(pair.schemaVersion))) missing.push(pair)
  }
  return missing
}

/**
 * The refusal for a session that holds records nobody here can read. Driving it anyway would let an
 * older or partial install act on state it cannot see ("no unsupervised fallback"), so the message
 * names every missing pair and what brings a reader back.
 */
export function readerUnavailable(sessionId: string, missing: readonly RecordPair[]): TaskwardError {
  const names = missing.map((pair) => `${pairLabel(pair)} (first at seq ${pair.firstSeq})`).join(', ')
  const namespaces = [...new Set(missing.map((pair) => pair.namespace))].map((ns) => `"${ns}"`).join(', ')
  return new TaskwardError('READER_UNAVAILABLE',
    `Session ${sessionId} holds records that no loaded plugin can read: ${names}. `
    + `Install or enable a plugin version with a compatible ${namespaces} extension reader, then resume the session.`,
    { sessionId, missing: missing.map(({ namespace, schemaVersion, firstSeq }) => ({ namespace, schemaVersion, firstSeq })) })
}

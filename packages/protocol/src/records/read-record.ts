import { TaskwardError } from '../errors'
import { RECORD_EVENT_TYPE, isRecordEnvelope } from '../envelope'
import type { SessionEvent } from '../events'
import type { ReadRecord, RecordReader } from './reader'

/**
 * Read an `extension/record` event with whichever reader reads its namespace and version, for folds
 * that see several namespaces. No reader for the namespace → `READER_UNAVAILABLE`; a reader for the
 * namespace that cannot read it (version, kind, payload) or data that is no envelope →
 * `RECORD_UNSUPPORTED`, each naming the seq.
 */
export function readRecord<T = any>(readers: Iterable<RecordReader>, event: SessionEvent): ReadRecord<T> {
  const envelope = event.data
  if (event.type !== RECORD_EVENT_TYPE || !isRecordEnvelope(envelope)) {
    throw new TaskwardError('RECORD_UNSUPPORTED',
      `Event at seq ${event.seq} (${event.type}) is not a valid record envelope; inspect the session log.`,
      { seq: event.seq, type: event.type })
  }
  const candidates = [...readers].filter((reader) => reader.namespace === envelope.namespace)
  if (!candidates.length) {
    throw new TaskwardError('READER_UNAVAILABLE',
      `Record at seq ${event.seq} (${envelope.namespace} v${envelope.schemaVersion} ${envelope.kind}) has no reader; `
      + `install or enable a plugin with a compatible "${envelope.namespace}" extension reader.`,
      { namespace: envelope.namespace, schemaVersion: envelope.schemaVersion, kind: envelope.kind, seq: event.seq })
  }
  // A reader whose range holds the version; otherwise let any reader of the namespace explain why not.
  const reader = candidates.find((r) => r.reads(envelope.schemaVersion)) ?? candidates[0]
  return reader.read<T>(envelope, event.seq)
}

import { RECORD_EVENT_TYPE } from './record-names'
import Schema from 'schemastery'
import { isEnvelopeShape } from './records/shape'

export { RECORD_EVENT_TYPE }

/**
 * A plugin's durable record: the data of an `extension/record` session event. `schemaVersion` is the
 * version of `payload`'s shape within `namespace`; readers upgrade older versions on read.
 */
export interface RecordEnvelope<P = unknown> {
  namespace: string
  schemaVersion: number
  kind: string
  recordId: string
  payload: P
}

export const RecordEnvelope: Schema<RecordEnvelope> = Schema.object({
  namespace: Schema.string().pattern(/^[a-z0-9][a-z0-9-]*$/).required(),
  schemaVersion: Schema.natural().min(1).required(),
  kind: Schema.string().min(1).required(),
  recordId: Schema.string().min(1).required(),
  payload: Schema.any().required(),
}) as Schema<RecordEnvelope>

export function isRecordEnvelope(value: unknown): value is RecordEnvelope {
  // The plain check first (it accepts only what the schema accepts, tested in records-fast-path):
  // every record appended and every record folded is asked, and schemastery's generic resolution
  // of five fields cost more than the fold of most records.
  if (isEnvelopeShape(value)) return true
  try {
    RecordEnvelope(value as RecordEnvelope)
    return true
  } catch {
    return false
  }
}

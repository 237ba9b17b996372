import Schema from 'schemastery'
import { defineReader, type RecordEnvelope, type TransitionKind } from '@taskward/protocol'

/** The plugin's own record namespace: nobody else writes or reads it. */
export const AUDIT_NAMESPACE = 'taskward-example-audit'
export const AUDIT_SCHEMA_VERSION = 1

/** One supervisor transition, as the listener saw it. */
export interface AuditEntry {
  taskId: string
  revision: number
  kind: TransitionKind
  phase: string
}

/** A note a person left on a task with `/task audit note <text>`. */
export interface AuditNote {
  taskId: string
  text: string
}

const entrySchema = Schema.object({
  taskId: Schema.string().required(),
  revision: Schema.natural().min(1).required(),
  kind: Schema.string().required(),
  phase: Schema.string().required(),
})

const noteSchema = Schema.object({
  taskId: Schema.string().required(),
  text: Schema.string().min(1).required(),
})

/**
 * The reader of the namespace. Registered with `admission`: while this plugin is loaded, sessions that
 * hold audit records may run; once it is unloaded they are refused (`READER_UNAVAILABLE`).
 */
export const auditReader = defineReader({
  namespace: AUDIT_NAMESPACE,
  writes: AUDIT_SCHEMA_VERSION,
  minVersion: 1,
  kinds: {
    entry: { schemas: { 1: entrySchema } },
    note: { schemas: { 1: noteSchema } },
  },
})

export function entryEnvelope(entry: AuditEntry): RecordEnvelope<AuditEntry> {
  return { namespace: AUDIT_NAMESPACE, schemaVersion: AUDIT_SCHEMA_VERSION, kind: 'entry', recordId: `${entry.taskId}:${entry.revision}`, payload: entry }
}

export function noteEnvelope(note: AuditNote, recordId: string): RecordEnvelope<AuditNote> {
  return { namespace: AUDIT_NAMESPACE, schemaVersion: AUDIT_SCHEMA_VERSION, kind: 'note', recordId, payload: note }
}

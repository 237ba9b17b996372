import type { ProjectionDef } from '@taskward/host'
import { RECORD_EVENT_TYPE, type SessionEvent } from '@taskward/protocol'
import { AUDIT_NAMESPACE, auditReader, type AuditEntry } from './records'

export const AUDIT_PROJECTION_KEY = 'taskward-example-audit'

/** What `/task audit` shows: per task, its transitions (in log order) and notes. */
export interface AuditState {
  tasks: Record<string, { entries: (AuditEntry & { seq: number })[], notes: string[] }>
  /** Seqs of audit records the reader refused (kept visible instead of failing the fold). */
  unreadable: number[]
}

/** A pure fold over the session log; the host caches it per session (bump `version` when its shape changes). */
export const auditProjection: ProjectionDef<AuditState> = {
  key: AUDIT_PROJECTION_KEY,
  version: 1,
  init: () => ({ tasks: {}, unreadable: [] }),
  apply(state: AuditState, event: SessionEvent): AuditState {
    if (event.type !== RECORD_EVENT_TYPE || (event.data as { namespace?: string })?.namespace !== AUDIT_NAMESPACE) return state
    let record
    try {
      record = auditReader.read(event.data as any, event.seq)
    } catch {
      return { ...state, unreadable: [...state.unreadable, event.seq] }
    }
    const taskId: string = record.payload.taskId
    const task = state.tasks[taskId] ?? { entries: [], notes: [] }
    const next = record.kind === 'entry'
      ? { ...task, entries: [...task.entries, { ...record.payload, seq: event.seq }] }
      : { ...task, notes: [...task.notes, record.payload.text] }
    return { ...state, tasks: { ...state.tasks, [taskId]: next } }
  },
}

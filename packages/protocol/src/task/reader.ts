import { TaskwardError } from '../errors'
import type { RecordEnvelope } from '../envelope'
import { defineReader, type RecordReader } from '../records/reader'
import { canonicalTask } from './canonical'
import { pruneToSchema } from './prune'
import { TASK_MIN_SCHEMA_VERSION, TASK_NAMESPACE, TASK_SCHEMA_VERSION, TASK_STATE_KIND, taskStateSchema } from './schemas'
import { isTaskStateV11 } from './state-shape'
import type { Task } from './types'

/** v4 → v5: the run array becomes an object keyed by node id. Nothing else changes. */
function runsArrayToRecord(payload: any) {
  const runs: Record<string, unknown> = {}
  for (const { nodeId, ...run } of payload.nodeRuns as { nodeId: string }[]) {
    if (Object.hasOwn(runs, nodeId)) {
      throw new TaskwardError('RECORD_UNSUPPORTED',
        `Task ${payload.id} revision ${payload.revision} has two runs for node "${nodeId}"; inspect the session log.`)
    }
    runs[nodeId] = run
  }
  return { ...payload, nodeRuns: runs }
}

const schemas: Record<number, any> = {}
// Each upgrade first drops what version v cannot contain, so no later field slips through an old record.
const upgrades: Record<number, (payload: any) => any> = {}
for (let v = TASK_MIN_SCHEMA_VERSION; v <= TASK_SCHEMA_VERSION; v++) {
  const schema = schemas[v] = taskStateSchema(v)
  upgrades[v] = v === 4
    ? (payload) => runsArrayToRecord(pruneToSchema(schema, payload))
    : (payload) => pruneToSchema(schema, payload)
}

/**
 * Reads `dsh-task-supervisor` `state` records of versions 1–11 into today's `Task`. Fields an older
 * record lacks stay absent; the result is canonical (see canonical.ts). Throws `RECORD_UNSUPPORTED`.
 * Schema-11 records are checked by `isTaskStateV11` first and reach schemastery only when it refuses.
 */
export const taskReader: RecordReader = defineReader({
  namespace: TASK_NAMESPACE,
  writes: TASK_SCHEMA_VERSION,
  minVersion: TASK_MIN_SCHEMA_VERSION,
  kinds: { [TASK_STATE_KIND]: { schemas, upgrades, today: isTaskStateV11, canonical: canonicalTask } },
})

/** Read a state record's task (shorthand for `taskReader.read<Task>(envelope, seq).payload`). */
export function readTaskState(envelope: RecordEnvelope, seq: number): Task {
  return taskReader.read<Task>(envelope, seq).payload
}

/**
 * The envelope that persists `task` (always schema 11, canonical payload). `recordId` is chosen by the
 * caller (ids are never generated here); `${task.id}:${task.revision}` is a natural choice.
 */
export function taskStateEnvelope(task: Task, recordId = `${task.id}:${task.revision}`): RecordEnvelope<Task> {
  return {
    namespace: TASK_NAMESPACE,
    schemaVersion: TASK_SCHEMA_VERSION,
    kind: TASK_STATE_KIND,
    recordId,
    payload: canonicalTask(task),
  }
}

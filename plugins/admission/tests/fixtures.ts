import Schema from 'schemastery'
import type { Context } from 'cordis'
import { RECORD_EVENT_TYPE, defineReader, type RecordReader } from '@taskward/protocol'
import type { Session } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import Admission from '../src'

export const TASKS = 'dsh-task-supervisor'
export const REPAIR = 'dsh-task-supervisor-repair'

const state = { schemas: { 1: Schema.object({ id: Schema.string().required() }) } }

/** Test readers in the shape of the real ones, with a trivial payload schema. */
export const tasksReader = (writes: number) => defineReader({ namespace: TASKS, writes, minVersion: 1, kinds: { state } })
export const repairReader = defineReader({
  namespace: REPAIR, writes: 1, minVersion: 1,
  kinds: { proposal: state, confirm: state, decline: state },
})

/** A plugin that does what a real one does: register its reader for as long as it is loaded. */
export function readerPlugin(reader: RecordReader) {
  return {
    name: `reader-${reader.namespace}-${reader.maxVersion}`,
    inject: ['admission'],
    apply(ctx: Context) {
      ctx.admission.registerReader(reader)
    },
  }
}

export function appendRecord(session: Session, namespace: string, schemaVersion: number, kind = 'state', id = 't1') {
  return session.append(RECORD_EVENT_TYPE, { namespace, schemaVersion, kind, recordId: `${namespace}/${session.seq}`, payload: { id } })
}

/** A session holding a v10 task record and a repair v1 record among ordinary events. */
export async function controlledSession(ctx: Context, cwd: string, id = 'controlled') {
  const session = await ctx.sessions.create({ id, cwd })
  await session.append('user/message', { text: '/task new fix the parser' })
  await appendRecord(session, TASKS, 9)
  await appendRecord(session, TASKS, 10)
  await appendRecord(session, REPAIR, 1, 'proposal')
  return session
}

/**
 * For each test of the calling `describe`: a host with the admission plugin and a task reader of
 * versions 1–10, and a workspace of its own (`cwd`); both gone after it.
 */
export function hostWithTasksReader(): { host: TestHost, cwd: string } {
  const each = {} as { host: TestHost, cwd: string }
  beforeEach(async () => {
    each.cwd = await tempWorkspace()
    each.host = await TestHost.boot({ plugins: [[Admission, {}]], waitFor: ['admission'] })
    each.host.ctx.plugin(readerPlugin(tasksReader(10)))
  })
  afterEach(async () => {
    await each.host.dispose()
    await removeTree(each.cwd)
  })
  return each
}

/*
 * @taskward/example-plugin-audit — the plugin docs/plugins.md builds step by step. It keeps an audit
 * trail of every task transition in its own record namespace, lets a person leave notes on a task, shows
 * both with `/task audit`, and refuses completion until the task has a note (when `requireNote` is on).
 */
import { Context, Schema } from 'cordis'
import { RECORD_EVENT_TYPE, TaskwardError, TRANSITION_KINDS, type TransitionKind } from '@taskward/protocol'
// These type-only imports bring the packages' `declare module 'cordis'` augmentations into scope:
// `ctx.projections` (host), `ctx.supervisor` and the `supervisor/transition` event, `ctx.admission`.
import type {} from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import type {} from '@taskward/plugin-admission'
import { NOTE_MISSING, USAGE } from './errors'
import { auditProjection, AUDIT_PROJECTION_KEY, type AuditState } from './projection'
import { auditReader, entryEnvelope, noteEnvelope } from './records'

export * from './errors'
export * from './projection'
export * from './records'

export const name = 'taskward-example-audit'

/** `supervisor` and `projections` are required; `admission` is optional (without it nobody checks readers). */
export const inject = {
  supervisor: { required: true },
  projections: { required: true },
  admission: { required: false },
}

export interface Config {
  requireNote: boolean
  ignore: TransitionKind[]
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  requireNote: Schema.boolean().default(true)
    .description('Refuse completion (`audit.note_missing`) until the task has a note from `/task audit note <text>`.'),
  ignore: Schema.array(Schema.union([...TRANSITION_KINDS])).default([])
    .description('Transition kinds not to record (e.g. `node-started`).'),
})

export function apply(ctx: Context, config: Config) {
  ctx.projections.register(auditProjection)

  // Admission is optional: register the reader whenever it is (or becomes) available.
  ctx.inject(['admission'], (ctx) => {
    ctx.admission.registerReader(auditReader)
  })

  // The trail: one entry per committed transition. The listener does not await the append (it must
  // not block the supervisor), and it never throws: a failed append is logged.
  ctx.on('supervisor/transition', ({ kind, next, session }) => {
    if (config.ignore.includes(kind)) return
    session.append(RECORD_EVENT_TYPE, entryEnvelope({ taskId: next.id, revision: next.revision, kind, phase: next.phase }))
      .catch((error) => ctx.logger('audit').warn('could not record the transition:', error))
  })

  ctx.supervisor.registerCompletionGate(async (session, task) => {
    if (!config.requireNote) return
    const state = await ctx.projections.get<AuditState>(session, AUDIT_PROJECTION_KEY)
    if (state.tasks[task.id]?.notes.length) return
    return new TaskwardError(NOTE_MISSING,
      `Task ${task.id} has no audit note. Ask the user to add one with "/task audit note <text>", then request completion again.`,
      { taskId: task.id })
  })

  ctx.supervisor.registerSubcommand('audit', async ({ session, args }) => {
    const task = (await ctx.supervisor.state(session)).current
    if (!task) throw new TaskwardError('TASK_NOT_FOUND', 'There is no task in this session yet; start one with /task new <objective>.')
    const [verb, ...rest] = args.split(/\s+/).filter(Boolean)
    if (verb === 'note') {
      const text = rest.join(' ')
      if (!text) throw new TaskwardError(USAGE, 'Write the note after the word: /task audit note <text>.')
      const event = await session.append(RECORD_EVENT_TYPE, noteEnvelope({ taskId: task.id, text }, `${task.id}:note:${session.seq}`))
      return { noted: text, taskId: task.id, seq: event.seq }
    }
    if (verb !== undefined) throw new TaskwardError(USAGE, `Unknown "/task audit ${verb}". Use /task audit, or /task audit note <text>.`, { verb })
    const state = await ctx.projections.get<AuditState>(session, AUDIT_PROJECTION_KEY)
    const trail = state.tasks[task.id] ?? { entries: [], notes: [] }
    return { taskId: task.id, transitions: trail.entries.map((e) => `${e.revision} ${e.kind} → ${e.phase}`), notes: trail.notes }
  })
}

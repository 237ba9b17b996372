import type { Context } from 'cordis'
import { TaskwardError } from '@taskward/protocol'
import { readCarried } from './carrier'
import type { DshSession } from './dsh-types'

/*
 * Consultations inside DSH (docs/dsh.md, docs/repair.md). DSH has no session roles: a consultation is a
 * DSH session Taskward opened with `/task consult` in a supervised main session — in that session's
 * workspace, its header's `parentSession` the main session — whose log carries Taskward's marker. The
 * marker rides in the carrier (nothing a model or a DSH user sends can write one), and it counts only
 * when it names the session's own parent, so a marker cannot make a session work for another main
 * session than the one DSH records as its parent (the one it was opened from).
 */

/** The carried event that marks a session as a consultation of `mainSessionId`. */
export const CONSULTATION_MARKER = 'dsh/consultation-opened'

export interface ConsultationMarker {
  mainSessionId: string
}

/** Whether `session`'s log carries a consultation marker naming its own parent (reads the log once). */
export function consultationMarked(session: DshSession): boolean {
  const parent = session.header.parentSession
  if (!parent) return false
  return session.events.some((event) => {
    const carried = readCarried(event, session.id)
    return carried?.type === CONSULTATION_MARKER && (carried.data as Partial<ConsultationMarker> | null)?.mainSessionId === parent
  })
}

interface ConsultHost {
  supervisor: { state(session: any): Promise<{ current?: { id: string, revision: number, phase: string } }>, registerSubcommand(name: string, handler: (input: { session: any, args: string }) => unknown): () => void }
  agents: { create(options: { cwd?: string, role?: string, parentId?: string }): Promise<{ session: { id: string } }> }
}

/**
 * `/task consult`: open a consultation of this (main, supervised) session and answer its DSH session
 * id. Its agent is offered `task_status` (the main session's status and citable evidence) and
 * `supervisor_propose_repair`; the supervisor's guard holds it to the main session's task.
 */
export const ConsultCommand = {
  name: 'taskward-consult',
  inject: ['supervisor', 'agents'],
  apply(ctx: Context) {
    const { supervisor, agents } = ctx as unknown as ConsultHost
    supervisor.registerSubcommand('consult', async ({ session, args }) => {
      // Words after it would be silently dropped (no DSH API sends a first message to a new session).
      if (args?.trim()) {
        throw new TaskwardError('BAD_REQUEST', '/task consult takes nothing after it: type /task consult alone, then ask your question in the consultation session it opens.')
      }
      if (session.role !== 'main') {
        throw new TaskwardError('FORBIDDEN', `/task consult opens a consultation of a main session; this is a ${session.role} session. Type it in the supervised session itself.`)
      }
      const task = (await supervisor.state(session)).current
      if (!task) throw new TaskwardError('TASK_INVALID', 'This session has no task to consult about; start one with /task new <objective>.')
      const consultation = await agents.create({ cwd: session.cwd, role: 'consultation', parentId: session.id })
      return {
        sessionId: consultation.session.id,
        mainSessionId: session.id,
        taskId: task.id,
        revision: task.revision,
        message: `Consultation ${consultation.session.id} opened for task ${task.id} (open that session in DSH). `
          + 'Its agent reads this session\'s task with task_status and may propose a repair with supervisor_propose_repair; '
          + 'it cannot change the workspace while the task is complete.',
      }
    })
  },
}

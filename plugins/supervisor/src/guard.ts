import type { Context } from 'cordis'
import type { Session } from '@taskward/host'
import { admitLinkedTool, admitTool, TaskwardError } from '@taskward/protocol'
import type { Supervisor } from './service'

/** What a reviewer session may run: its review tools and read-only file tools. */
export const REVIEWER_TOOLS: readonly string[] = ['review_read_log', 'review_verdict', 'read', 'glob', 'grep']

/**
 * Tool admission. Main sessions: the pure `admitTool` on the session's projection (a complete task
 * admits only status, repair proposals and read-only tools; a poisoned projection only inspection).
 * Reviewer sessions: read-only. A session working for a main session (a consultation) is at least as
 * restricted as its main: only inspection while that projection is poisoned, only reading and proposing
 * a repair while that task is complete (`admitLinkedTool`); other sessions are not this guard's business.
 * A poisoned main session also refuses every agent step, and so does every session working for it.
 */
export function registerGuard(ctx: Context, supervisor: Supervisor) {
  ctx.tools.guard(async ({ session, name }) => {
    if (session.role === 'reviewer') {
      if (REVIEWER_TOOLS.includes(name)) return
      return {
        deny: {
          code: 'FORBIDDEN',
          message: `Reviewer sessions are read-only, so ${name} is not allowed. Read with review_read_log, read, glob or grep `
            + 'and answer with review_verdict.',
        },
      }
    }
    if (session.role !== 'main') {
      const main = await mainOf(session)
      if (!main) return
      const linked = admitLinkedTool(await supervisor.state(main), main.id, name)
      return 'deny' in linked ? linked : undefined
    }
    const admission = admitTool(await supervisor.state(session), name)
    return 'deny' in admission ? admission : undefined
  })

  /** The main session a (non-reviewer) session works for, if any. */
  async function mainOf(session: Session): Promise<Session | undefined> {
    if (!session.parentId) return
    const main = await ctx.sessions.get(session.parentId).catch(() => undefined)
    return main?.role === 'main' ? main : undefined
  }

  ctx.on('agent/before-step', async (agent) => {
    if (agent.session.role === 'reviewer') return
    const main = agent.session.role === 'main' ? agent.session : await mainOf(agent.session)
    if (!main) return
    const state = await supervisor.state(main)
    if (!state.poisoned) return
    const whose = main === agent.session ? 'the session log' : `the log of session ${main.id}, which this session works for`
    return new TaskwardError('SUPERVISOR_POISONED',
      `${state.poisoned.message}. The agent cannot take steps until a person inspects ${whose}.`,
      { sessionId: main.id, seq: state.poisoned.seq })
  })
}

import type { Context } from 'cordis'
import type { Agent } from '@taskward/host'
import { admitLinkedTool, admitTool, TaskwardError, type SupervisorState } from '@taskward/protocol'
import type { Supervisor } from './service'

/** What a reviewer session may run: its review tools and read-only file tools. */
export const REVIEWER_TOOLS: readonly string[] = ['review_read_log', 'review_verdict', 'read', 'glob', 'grep']

/**
 * Tool admission. Main sessions: the pure `admitTool` on the session's projection (a complete task
 * admits only status, repair proposals and read-only tools; a poisoned projection only inspection).
 * Reviewer sessions: read-only. A session working for a main session (a consultation) may only read
 * and propose a repair while that task is complete (`admitLinkedTool`); other sessions are not this
 * guard's business.
 * A poisoned main session also refuses every agent step.
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
      if (!session.parentId) return
      const main = await ctx.sessions.get(session.parentId).catch(() => undefined)
      if (main?.role !== 'main') return
      const linked = admitLinkedTool(await supervisor.state(main), main.id, name)
      return 'deny' in linked ? linked : undefined
    }
    const admission = admitTool(await supervisor.state(session), name)
    return 'deny' in admission ? admission : undefined
  })

  // A step guard, called directly by every turn: synchronous while the session's state is in memory.
  ctx.agents.stepGuard((agent) => {
    if (agent.session.role !== 'main') return
    const state = supervisor.currentState(agent.session)
    if (state) return poisonedRefusal(agent, state)
    return supervisor.state(agent.session).then((state) => poisonedRefusal(agent, state))
  })
}

/** A poisoned main session refuses every agent step. */
function poisonedRefusal(agent: Agent, state: SupervisorState): TaskwardError | undefined {
  if (!state.poisoned) return
  return new TaskwardError('SUPERVISOR_POISONED',
    `${state.poisoned.message}. The agent cannot take steps until a person inspects the session log.`,
    { sessionId: agent.session.id, seq: state.poisoned.seq })
}

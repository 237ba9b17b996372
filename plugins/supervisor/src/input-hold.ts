import type { Context } from 'cordis'
import type {} from '@taskward/host'
import type { SupervisorState } from '@taskward/protocol'

/*
 * The operator's queue policy, supervisor half (docs/host.md, "Queue policy"): while a main session's
 * task waits for a review, its agent's queue is held, so input typed meanwhile runs as the next turn
 * after the verdict instead of changing the workspace under review. The supervisor owns it (not a
 * view of it): a host without the console holds the queue all the same. States can be announced out of
 * order (some are folded asynchronously); only the newest one (by asOfSeq) decides.
 */
export function holdInputDuringReviews(ctx: Context) {
  const holds = new Map<string, { agent: object, release: () => void }>()
  const newest = new Map<string, number>()

  ctx.on('supervisor/changed', (sessionId: string, state: SupervisorState) => {
    if ((newest.get(sessionId) ?? -1) > state.asOfSeq) return
    newest.set(sessionId, state.asOfSeq)
    const agent = ctx.agents.get(sessionId)
    const reviewing = state.current?.phase === 'reviewing' && !!agent && agent.session.role === 'main'
    const held = holds.get(sessionId)
    if (held && (!reviewing || held.agent !== agent)) {
      holds.delete(sessionId)
      held.release()
    }
    if (reviewing && !holds.has(sessionId)) holds.set(sessionId, { agent: agent!, release: agent!.hold() })
  })

  ctx.on('dispose', () => {
    for (const held of holds.values()) held.release()
    holds.clear()
  })
}

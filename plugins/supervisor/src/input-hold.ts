import type { Context } from 'cordis'
import { onDispose } from '@taskward/cordis-compat'
import { original } from '@taskward/host'
import type { SupervisorState } from '@taskward/protocol'
import type { Supervisor } from './service'

/*
 * The operator's queue policy, supervisor half (docs/host.md, "Queue policy"): while a main session's
 * task waits for a review, its agent's queue is held, so input typed meanwhile runs as the next turn
 * after the verdict instead of changing the workspace under review. The supervisor owns it (not a
 * view of it): a host without the console holds the queue all the same. States can be announced out of
 * order (some are folded asynchronously); only the newest one (by asOfSeq) decides.
 */
export function holdInputDuringReviews(ctx: Context, supervisor: Supervisor) {
  const holds = new Map<string, { agent: object, release: () => void }>()
  const newest = new Map<string, number>()
  let disposed = false
  // Read on every announced state: the registry itself, not cordis' tracing view (a required inject of the supervisor).
  const agents = original(ctx.agents)

  const decide = (sessionId: string, state: SupervisorState) => {
    if (disposed || (newest.get(sessionId) ?? -1) > state.asOfSeq) return
    newest.set(sessionId, state.asOfSeq)
    const agent = agents.get(sessionId)
    const reviewing = state.current?.phase === 'reviewing' && !!agent && agent.session.role === 'main'
    const held = holds.get(sessionId)
    if (held && (!reviewing || held.agent !== agent)) {
      holds.delete(sessionId)
      held.release()
    }
    if (reviewing && !holds.has(sessionId)) holds.set(sessionId, { agent: agent!, release: agent!.hold() })
  }

  ctx.on('supervisor/changed', decide)

  // A supervisor loaded while agents already run (a reload during a review) holds what is under review
  // now: the holds of the instance before it went with it.
  // On the next tick (cordis 3's `ready` for a plugin loaded into a running app; cordis 4 has no such event).
  queueMicrotask(() => {
    if (disposed) return
    for (const agent of ctx.agents.list()) {
      if (agent.session.role !== 'main') continue
      supervisor.state(agent.session).then((state) => decide(agent.session.id, state), () => {})
    }
  })

  // An agent spawned while its task may be under review (resumed after a restart, when no state is
  // announced): held at once, until the state read says whether the task is under review.
  ctx.on('agent/created', (agent) => {
    const sessionId = agent.session.id
    if (disposed || agent.session.role !== 'main') return
    const stale = holds.get(sessionId)
    if (stale && stale.agent !== agent) {
      holds.delete(sessionId)
      stale.release()
    }
    if (holds.has(sessionId)) return
    const known = supervisor.currentState(agent.session)
    if (known) return decide(sessionId, known)
    holds.set(sessionId, { agent, release: agent.hold() })
    // With the state, the usual decision keeps or drops the hold (a newer announcement may have made it
    // already); a failed read drops it (the task's own guards still refuse what a broken state forbids).
    const unheld = () => {
      const held = holds.get(sessionId)
      if (held?.agent !== agent) return
      holds.delete(sessionId)
      held.release()
    }
    supervisor.state(agent.session).then((state) => decide(sessionId, state), unheld)
  })

  onDispose(ctx, () => {
    disposed = true
    for (const held of holds.values()) held.release()
    holds.clear()
  })
}

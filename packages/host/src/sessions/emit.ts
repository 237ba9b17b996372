import type { Context } from 'cordis'
import type { SessionEvent } from '@taskward/protocol'
import type { Session } from './session'

const ORIGINAL = Symbol.for('cordis.original')

type Emit = (session: Session, event: SessionEvent) => void

/**
 * `session/event` is emitted once per appended event, and cordis' generic dispatch (tracing proxies,
 * shadow contexts, an `internal/event` round) costs several times the insert itself. With no
 * `internal/event` listener and no `this` filter (the emit passes none), dispatch is exactly "call
 * every listener in order": do that directly on cordis' hook list, and fall back to `ctx.emit`
 * whenever the hook list is not what this expects or someone watches `internal/event`.
 */
export function sessionEventEmitter(ctx: Context): Emit {
  const slow: Emit = (session, event) => ctx.emit('session/event', session, event)
  const lifecycle = (ctx as any).events
  const hooks = (lifecycle?.[ORIGINAL] ?? lifecycle)?._hooks
  if (!hooks || typeof hooks !== 'object') return slow
  return (session, event) => {
    const listeners = hooks['session/event']
    if (hooks['internal/event']?.length || (listeners !== undefined && !Array.isArray(listeners))) return slow(session, event)
    if (!listeners?.length) return
    for (const hook of listeners.slice()) {
      if (typeof hook?.callback !== 'function') return slow(session, event)
      hook.callback(session, event)
    }
  }
}

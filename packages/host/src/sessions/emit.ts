import type { Context } from 'cordis'
import type { SessionEvent } from '@taskward/protocol'
import type { Session } from './session'

const ORIGINAL = Symbol.for('cordis.original')

type Emit = (session: Session, event: SessionEvent) => void

/** Emitters made per listener table (one per app) and event name: reading the table costs a context lookup. */
const made = new WeakMap<object, Map<string, (...args: any[]) => void>>()
const tables = new WeakMap<object, Record<string, unknown> | null>()

function hooksOf(ctx: Context): Record<string, unknown> | undefined {
  let hooks = tables.get(ctx)
  if (hooks === undefined) {
    const lifecycle = (ctx as any).events
    const table = (lifecycle?.[ORIGINAL] ?? lifecycle)?._hooks
    hooks = table && typeof table === 'object' ? table as Record<string, unknown> : null
    tables.set(ctx, hooks)
  }
  return hooks ?? undefined
}

/**
 * `ctx.emit(name, ...args)` for an event emitted on a hot path (once per appended event, per step, per
 * streamed chunk): cordis' generic dispatch (a stack capture for the `emit` getter, tracing proxies,
 * shadow contexts, an `internal/event` round) costs several times what the listeners do. With no
 * `internal/event` listener and no `this` filter (the emit passes none), dispatch is exactly "call
 * every listener in order, a throw stops it": do that directly on cordis' hook list, and fall back to
 * `ctx.emit` whenever the hook list is not what this expects or someone watches `internal/event`.
 * The emitter is made once per context and name.
 */
export function directEmitter<A extends unknown[]>(ctx: Context, name: string): (...args: A) => void {
  let byName = made.get(ctx)
  if (!byName) made.set(ctx, byName = new Map())
  let emit = byName.get(name)
  if (emit) return emit
  const slow = (...args: A) => (ctx.emit as (...all: unknown[]) => void)(name, ...args)
  const hooks = hooksOf(ctx)
  emit = !hooks ? slow : (...args: A) => {
    const listeners = hooks[name]
    const watched = hooks['internal/event'] as unknown[] | undefined
    if (watched?.length || (listeners !== undefined && !Array.isArray(listeners))) return slow(...args)
    if (!listeners?.length) return
    for (const hook of listeners.slice()) {
      if (typeof hook?.callback !== 'function') return slow(...args)
      hook.callback.apply(null, args)
    }
  }
  byName.set(name, emit)
  return emit
}

/** Whether anyone listens to `name` (or to every event): an emit nobody hears need not build its arguments. */
export function isHeard(ctx: Context, name: string): boolean {
  const hooks = hooksOf(ctx)
  if (!hooks) return true
  const listeners = hooks[name] as unknown[] | undefined
  return !!listeners?.length || !!(hooks['internal/event'] as unknown[] | undefined)?.length
}

/** `session/event`, emitted once per appended event (see `directEmitter`). */
export function sessionEventEmitter(ctx: Context): Emit {
  return directEmitter<[Session, SessionEvent]>(ctx, 'session/event')
}

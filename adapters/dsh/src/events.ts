import type { Context } from 'cordis'

/*
 * Events: Taskward's plugins listen to `agent/created`, `agent/turn-end`, `agent/before-resume`…,
 * and DSH emits some of the same names with other payloads (`agent/created` carries `{agent}` of a
 * DSH agent). Events are not isolated like services, so the adapter renames, for listeners registered
 * INSIDE Taskward's subtree only, every `agent/*`, `session/*`, `tool/*` and `command/*` event to
 * `taskward:<name>` (cordis 4's `internal/listener` hook), and emits our contract's events under
 * those names. DSH plugins keep hearing DSH's events; ours hear only ours.
 */

export const PRIVATE_PREFIX = 'taskward:'
const SHARED = /^(agent|session|tool|tools|command|commands)\//
const ISOLATE = Symbol.for('cordis.isolate')

/** Rename shared event names for listeners whose context resolves `sessions` to `label` (our subtree). */
export function privateEvents(entry: Context, label: symbol) {
  entry.on('internal/listener' as any, function (this: any, name: string | symbol, listener: any, options: any) {
    if (typeof name !== 'string' || !SHARED.test(name)) return
    if (this?.[ISOLATE]?.sessions !== label) return
    return this.on(PRIVATE_PREFIX + name, listener, options)
  })
}

/** Emit one of our contract's events to Taskward's listeners. */
export function emitPrivate(ctx: Context, name: string, ...args: unknown[]) {
  ;(ctx as any).emit(PRIVATE_PREFIX + name, ...args)
}

/** Ask Taskward's listeners of a vetoing event (`agent/before-resume`): the first coded answer wins. */
export async function askPrivate(ctx: Context, name: string, ...args: unknown[]): Promise<unknown> {
  for (const listener of (ctx as any).events.dispatch('emit', [PRIVATE_PREFIX + name])) {
    const answer = await listener(...args)
    if (answer) return answer
  }
}

import type { Context } from 'cordis'

/*
 * Taskward's plugins run in two Cordis trees: public cordis 3 on our own host and DSH's
 * `@deepseek-ai/cordis` 4 inside DSH. Plain `{name, inject, apply}` plugins and classes constructed with
 * `(ctx, config)` load in both; a cordis 3 `Service` subclass does not become a service in cordis 4,
 * and cordis 4 has neither the `ready` / `dispose` events nor `ctx.scope` / `ctx.lifecycle`. These few
 * helpers spell each difference once (checked against both sources: cordis 3.18 `@cordisjs/core` and
 * DSH's vendor/cordis 4.0.1), so plugin code stays one copy.
 */

/** Both versions key their tracing metadata with this global symbol. */
const TRACKER = Symbol.for('cordis.tracker')

/** Whether `ctx` belongs to a cordis 4 tree (it has a `fiber`; cordis 3 contexts have a `scope`). */
export function isCordis4(ctx: Context): boolean {
  return 'fiber' in ctx
}

/**
 * Register `service` as the service `name` owned by `ctx`'s plugin (removed when it is disposed).
 * Like a cordis `Service`, callers get a tracing view whose `ctx` property is the CALLER's context,
 * so what a method registers through `this.ctx` belongs to the calling plugin. `service.ctx` must be
 * the providing context.
 */
export function provideService<T extends object>(ctx: Context, name: string, service: T): T {
  Object.defineProperty(service, TRACKER, { value: { associate: name, property: 'ctx' }, configurable: true })
  const c = ctx as any
  // cordis 4: `provide(name, value)` registers the value; `set` only replaces an already provided one.
  // cordis 3: `provide(name)` only declares the property; `set(name, value)` registers it.
  if (isCordis4(ctx)) c.provide(name, service)
  else c.set(name, service)
  return service
}

/** Run `callback` when `ctx`'s plugin is disposed (cordis 3's `dispose` event; an effect in both). */
export function onDispose(ctx: Context, callback: () => void): () => void {
  return (ctx as any).effect(() => () => { callback() })
}

/**
 * Call `callback` once after `ms`, unless `ctx`'s plugin is disposed first (the timer is cleared then).
 * Returns a function that clears it. cordis 4 has no timer service (`ctx.setTimeout`), so this is a
 * plain timer tied to the plugin by an effect, in both versions. A plugin no longer active (disposed,
 * or unloading on cordis 4) cannot hold an effect: it gets no timer, and `callback` is never called —
 * callers that wait on it must check `isActive` (as they would a disposal).
 */
export function setTimer(ctx: Context, callback: () => void, ms: number): () => void {
  if (!isActive(ctx)) return () => {}
  let done = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let dispose = () => {}
  // Idempotent: the effect is let go once, whether the timer fired, was cleared or both.
  const cancel = () => {
    if (done) return
    done = true
    clearTimeout(timer)
    dispose()
  }
  // The effect first: if the plugin cannot hold one, no timer was started that would outlive it.
  try {
    dispose = onDispose(ctx, () => { done = true; clearTimeout(timer) })
  } catch {
    return () => {}
  }
  timer = setTimeout(() => {
    cancel()
    callback()
  }, ms)
  return cancel
}

/** Whether `ctx`'s plugin is still loaded (not disposed or being disposed). */
export function isActive(ctx: Context): boolean {
  const c = ctx as any
  // cordis 4 fiber states: PENDING 0, LOADING 1, ACTIVE 2, FAILED 3, DISPOSED 4, UNLOADING 5 (vendor/cordis fiber.ts).
  if (isCordis4(ctx)) return c.fiber.state === 1 || c.fiber.state === 2
  return !!c.scope.isActive
}

/**
 * The listeners of event `name` that `ctx` would call, as plain functions (called with `this` null).
 * For callers that must call them one by one and contain each one's failure, which neither version's
 * `emit` does.
 */
export function listenersOf(ctx: Context, name: string): ((...args: any[]) => unknown)[] {
  const c = ctx as any
  if (isCordis4(ctx)) return c.events.dispatch('emit', [name])
  const lifecycle = c.lifecycle
  return lifecycle.filterHooks(lifecycle._hooks[name] ?? []).map((hook: { callback: (...args: any[]) => unknown }) => hook.callback)
}

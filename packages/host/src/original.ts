const ORIGINAL = Symbol.for('cordis.original')

/**
 * The service object behind cordis' tracing view of it. Reading `ctx.tools` builds a stack capture, an
 * `internal/inject` dispatch and a fresh tracing proxy (~0.1 ms), and every property read through that
 * proxy derives a context again; the object itself is a plain object.
 *
 * Hold it only for what a call does, never to register: `register`, `guard`, `observe`, `stepGuard`…
 * tie what they add to the CALLING plugin through the traced `this.ctx`, so they must still be called
 * as `ctx.<service>.register(...)`. And hold it only for a service the holder injects as required (the
 * holder restarts when it changes); an optional service is read through `ctx.get(name)` each time.
 */
export function original<T>(service: T): T {
  return (service as any)?.[ORIGINAL] ?? service
}

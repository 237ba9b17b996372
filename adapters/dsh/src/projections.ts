import type { Context } from 'cordis'
import { onDispose } from '@taskward/cordis-compat'
import { TaskwardError, type SessionEvent } from '@taskward/protocol'
import type { SessionView } from './session-view'

export interface ProjectionDefinition<S> {
  key: string
  version?: number
  stateVersion?: number
  init(): S
  apply(state: S, event: SessionEvent): S
  types?: readonly string[]
  skipTo?(state: S, seq: number): S
}

interface Cached { state: any, asOfSeq: number, version: number }

/**
 * Taskward's `projections` (docs/host.md) inside DSH: the same pure folds over a session's view,
 * cached in memory per (session, key) and advanced by folding only the events after the cache. DSH
 * keeps every open session's log in memory and re-reads it at open, so a restart simply folds again
 * from seq 0 (no cache table; `flush` has nothing to write).
 */
export class DshProjectionsContract {
  private readonly definitions = new Map<string, ProjectionDefinition<any> & { version: number }>()
  private readonly caches = new Map<string, Cached>()
  protected ctx: Context

  constructor(ctx: Context) {
    this.ctx = ctx
  }

  register<S>(definition: ProjectionDefinition<S>) {
    const { key } = definition
    if (definition.version !== undefined && definition.stateVersion !== undefined && definition.version !== definition.stateVersion) {
      throw new TaskwardError('CONFIG_INVALID', `Projection ${key}: version and stateVersion differ; give one.`)
    }
    if (this.definitions.has(key)) throw new TaskwardError('CONFIG_INVALID', `Projection ${key} is already registered; one owner per key.`)
    const version = definition.version ?? definition.stateVersion ?? 1
    this.definitions.set(key, { ...definition, version })
    const definitions = this.definitions
    const caches = this.caches
    return onDispose(this.ctx, () => {
      definitions.delete(key)
      for (const id of [...caches.keys()]) if (id.endsWith(`\u0000${key}`)) caches.delete(id)
    })
  }

  private fold<S>(session: SessionView, key: string): Cached {
    const definition = this.definitions.get(key)
    if (!definition) throw new TaskwardError('NOT_FOUND', `No projection ${key} is registered.`)
    const id = `${session.id}\u0000${key}`
    let cached = this.caches.get(id)
    if (!cached || cached.version !== definition.version) cached = { state: definition.init(), asOfSeq: -1, version: definition.version }
    const last = session.seq - 1
    if (cached.asOfSeq < last) {
      let state = cached.state as S
      for (const event of session.readNow(cached.asOfSeq + 1, last - cached.asOfSeq)) {
        if (definition.types && !definition.types.includes(event.type)) {
          if (definition.skipTo) state = definition.skipTo(state, event.seq)
          continue
        }
        state = definition.apply(state, event)
      }
      cached = { state, asOfSeq: last, version: definition.version }
      this.caches.set(id, cached)
    }
    return cached
  }

  async get<S>(session: SessionView, key: string, _options: { background?: boolean } = {}): Promise<S> {
    return this.fold<S>(session, key).state
  }

  current<S>(session: SessionView, key: string): S | undefined {
    const cached = this.caches.get(`${session.id}\u0000${key}`)
    const definition = this.definitions.get(key)
    return cached && definition && cached.version === definition.version && cached.asOfSeq === session.seq - 1 ? cached.state : undefined
  }

  async describe(session: SessionView, key: string) {
    const cached = this.fold(session, key)
    return { asOfSeq: cached.asOfSeq, version: cached.version }
  }

  async invalidate(session?: SessionView, key?: string) {
    for (const id of [...this.caches.keys()]) {
      const [sessionId, k] = id.split('\u0000')
      if ((!session || session.id === sessionId) && (!key || key === k)) this.caches.delete(id)
    }
  }

  async flush() {}
}

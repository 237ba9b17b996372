import { Context, Service } from 'cordis'
import { SessionEvent, TaskwardError } from '@taskward/protocol'
import type { Session } from './sessions/session'

/**
 * A projection folds a session's log into state. `apply` must be pure and must not mutate its input
 * state: the cached state is shared. `version` names the fold's shape; a cached state of another
 * version is discarded and rebuilt from seq 0.
 */
export interface ProjectionDef<S = any> {
  key: string
  version: number
  init(): S
  apply(state: S, event: SessionEvent): S
}

interface Cached {
  version: number
  asOfSeq: number
  state: any
}

declare module 'cordis' {
  interface Context {
    projections: Projections
  }
}

export class Projections extends Service {
  static inject = ['database', 'sessions']
  private defs = new Map<string, ProjectionDef>()
  private memory = new Map<string, Cached>()
  private pending = new Map<string, Promise<any>>()
  private readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'projections', true)
    this.home = ctx
  }

  /** Register a projection; disposing the registering plugin removes it. */
  register<S>(def: ProjectionDef<S>) {
    if (this.defs.has(def.key)) {
      throw new TaskwardError('CONFIG_INVALID', `Projection "${def.key}" is already registered; each key has one owner.`)
    }
    this.defs.set(def.key, def)
    return this.ctx.effect(() => () => {
      if (this.defs.get(def.key) !== def) return
      this.defs.delete(def.key)
      for (const key of this.memory.keys()) if (key.endsWith('\u0000' + def.key)) this.memory.delete(key)
    })
  }

  /** The state folded up to the session's last event. Concurrent calls share one fold. */
  get<S = any>(session: Session, key: string): Promise<S> {
    const id = session.id + '\u0000' + key
    const running = this.pending.get(id)
    if (running) return running.then(() => this.get(session, key))
    const work = this.advance(session, key, id).finally(() => this.pending.delete(id))
    this.pending.set(id, work)
    return work
  }

  /** Where a projection currently stands (for diagnostics and benchmarks). */
  async describe(session: Session, key: string) {
    const [row] = await this.home.database.get('taskward_projection', { sessionId: session.id, key })
    return row ? { version: row.version, asOfSeq: row.asOfSeq } : undefined
  }

  private async advance(session: Session, key: string, id: string) {
    const def = this.defs.get(key)
    if (!def) throw new TaskwardError('NOT_FOUND', `No projection "${key}" is registered; is its plugin loaded?`)
    let cached = this.memory.get(id)
    if (!cached || cached.version !== def.version) {
      const [row] = await this.home.database.get('taskward_projection', { sessionId: session.id, key })
      cached = row && row.version === def.version
        ? { version: row.version, asOfSeq: row.asOfSeq, state: row.state }
        : { version: def.version, asOfSeq: -1, state: def.init() }
    }
    if (cached.asOfSeq >= session.seq - 1) {
      this.memory.set(id, cached)
      return cached.state
    }
    let { state, asOfSeq } = cached
    for await (const event of session.events(asOfSeq + 1)) {
      state = def.apply(state, event)
      asOfSeq = event.seq
    }
    const next = { version: def.version, asOfSeq, state }
    this.memory.set(id, next)
    await this.home.database.upsert('taskward_projection', [{ sessionId: session.id, key, ...next }])
    return state
  }

  /** Forget the cache of one session (or all) so that the next `get` rebuilds from seq 0. */
  async invalidate(session?: Session, key?: string) {
    for (const id of [...this.memory.keys()]) {
      const [sid, k] = id.split('\u0000')
      if ((!session || sid === session.id) && (!key || k === key)) this.memory.delete(id)
    }
    const query: any = {}
    if (session) query.sessionId = session.id
    if (key) query.key = key
    await this.home.database.remove('taskward_projection', query)
  }
}

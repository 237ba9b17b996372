import { Context, Schema, Service } from 'cordis'
import { SessionEvent, TaskwardError } from '@taskward/protocol'
import type { Session } from './sessions/session'
import { original } from './original'
import { onExit } from './exit'
import { eventStoreOf } from './sessions/event-store'
import { ProjectionMemory } from './projection-memory'
import { saveProjectionCaches } from './projection-caches'
import { projectionDef, type ProjectionDef, type ProjectionRegistration } from './projection-def'

export type { ProjectionDef, ProjectionRegistration } from './projection-def'

/** Persist advanced caches this long after the first unsaved event, so a restart folds only the tail. */
const PERSIST_DELAY_MS = 1000

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

export namespace Projections {
  export interface Config {
    cachedSessions: number
  }
}

export class Projections extends Service {
  static inject = ['database', 'sessions']
  static Config: Schema<Partial<Projections.Config>, Projections.Config> = Schema.object({
    cachedSessions: Schema.natural().min(1).default(1000)
      .description('How many sessions keep their folded states in memory. Past it, the sessions read or advanced least recently are forgotten once their caches are saved; their next read starts from the saved cache.'),
  })
  private defs = new Map<string, ProjectionDef>()
  private memory = new ProjectionMemory<Cached>()
  private pending = new Map<string, Promise<any>>()
  /** Folds reading the log now, per projection id: a rollback of their session marks where (see `advance`). */
  private folding = new Map<string, { refusedFrom: number }>()
  /** Caches advanced by appends but not yet saved. */
  private unsaved = new Map<string, { session: Session, key: string }>()
  private persistTimer?: NodeJS.Timeout
  private disposed = false
  /** Cache writes in flight, per projection id (each chained after the previous one). */
  private saving = new Map<string, { written: Promise<void>, settled: Promise<void> }>()
  private readonly home: Context
  /** The database itself, read once (a required inject: this service restarts when it changes). */
  private readonly database: Context['database']
  /** Taken at start: a write that fails after the host stopped still has somewhere to say so. */
  private readonly log: ReturnType<Context['logger']>

  private readonly cachedSessions: number
  /** Told of each session whose caches this process forgot (see `observeForgotten`). */
  private readonly forgottenObservers = new Set<(sessionId: string) => void>()

  constructor(ctx: Context, config: Partial<Projections.Config> = {}) {
    super(ctx, 'projections', true)
    this.cachedSessions = Projections.Config(config).cachedSessions
    this.home = ctx
    this.database = original(ctx.database)
    this.log = ctx.logger('projections')
    // The listener runs on every append: call the service itself, not through cordis' tracing proxy
    // that `this` is here (a property read through it costs more than the insert).
    const self = original(this)
    ctx.sessions.observe((session, event) => self.follow(session, event))
    ctx.sessions.observeRollback((session, fromSeq) => self.rollBack(session, fromSeq))
    ctx.on('dispose', () => {
      self.disposed = true
      clearTimeout(self.persistTimer)
    })
    // The cordis CLI ends the process on SIGINT/SIGTERM after awaiting `exit` (no dispose): save what the
    // appends advanced, so the next start folds only what came after.
    onExit(ctx, 'saving projection caches', this.log, () => self.flush())
  }

  /**
   * Keep every cache this process holds in step with the log as it grows, and save them a moment
   * later: a restart then folds only the events after the last save, not the whole log.
   */
  private follow(session: Session, event: SessionEvent) {
    const prefix = session.id + '\u0000'
    for (const id of this.memory.idsOf(session.id)) {
      const cached = this.memory.get(id)
      if (!cached || this.pending.has(id) || cached.asOfSeq !== event.seq - 1) continue
      const key = id.slice(prefix.length)
      const def = this.defs.get(key)
      if (!def || def.version !== cached.version) continue
      try {
        const state = !def.types || def.types.includes(event.type) ? def.apply(cached.state, event)
          : def.skipTo ? def.skipTo(cached.state, event.seq) : cached.state
        this.memory.set(id, { version: cached.version, asOfSeq: event.seq, state })
      } catch {
        // The fold refuses this event: the next `get` folds it again and reports the failure there.
        this.memory.delete(id)
        continue
      }
      this.unsaved.set(id, { session, key })
    }
    if (this.unsaved.size) this.schedulePersist()
  }

  /** Save (and trim to `cachedSessions`) a moment from now, once: the batched save. */
  private schedulePersist() {
    if (this.persistTimer || this.disposed) return
    this.persistTimer = setTimeout(() => {
      this.persistTimer = undefined
      this.persist().catch((error) => this.log.warn('saving projection caches failed: %s', error))
    }, PERSIST_DELAY_MS)
    this.persistTimer.unref?.()
  }

  /**
   * Keep a cache in memory. Past `cachedSessions` the next batched save trims: a session only read
   * (folded by `get`, never advanced by an append — the console reading old sessions) counts too.
   */
  private remember(id: string, cached: Cached) {
    this.memory.set(id, cached)
    if (this.memory.sessions > this.cachedSessions) this.schedulePersist()
  }

  /**
   * Call `listener(sessionId)` when this process forgot a session's caches (past `cachedSessions`):
   * a plugin that mirrors a projection in memory drops its mirror then, so that the bound holds for
   * it too (its next read starts from the saved cache). Disposing the calling plugin removes it.
   */
  observeForgotten(listener: (sessionId: string) => void) {
    const observers = original(this).forgottenObservers
    return this.ctx.effect(() => {
      observers.add(listener)
      return () => observers.delete(listener)
    })
  }

  /**
   * A step's staged events from `fromSeq` on were refused: a cache that folded any of them is
   * forgotten (never saved), or it would pass for current once the log grows back past it.
   */
  private rollBack(session: Session, fromSeq: number) {
    const prefix = session.id + '\u0000'
    for (const [id, reading] of this.folding) {
      if (id.startsWith(prefix)) reading.refusedFrom = Math.min(reading.refusedFrom, fromSeq)
    }
    for (const id of this.memory.idsOf(session.id)) {
      if ((this.memory.get(id)?.asOfSeq ?? -1) < fromSeq) continue
      this.memory.delete(id)
      this.unsaved.delete(id)
    }
  }

  /** Save every cache the appends advanced now, and wait for the writes in flight (before a stop). */
  async flush() {
    const self = original(this)
    clearTimeout(self.persistTimer)
    self.persistTimer = undefined
    await self.persist()
    await Promise.all([...self.saving.values()].map((write) => write.settled))
    // Again once the writes settled: a session whose cache was being written was kept by the save.
    self.forgetLeastRecent()
  }

  /**
   * Save the caches the appends advanced, in one write. The events they folded are written first (a
   * step stages its events until its end), and a cache that stands past its session's log — the step
   * it folded was refused — is dropped, never saved: a saved cache is always a fold of a log prefix.
   */
  private persist(): Promise<void> {
    // One save at a time: a save is written in chunks, and a later save of the same cache must not
    // land before an earlier one. With none under way it starts now, synchronously: what is staged at
    // this moment goes into its first write (a step going on meanwhile stages into a new batch).
    const run = () => this.persistNow().finally(() => { this.savesQueued-- })
    const next = this.savesQueued++ ? this.persisting.catch(() => {}).then(run) : run()
    this.persisting = next
    return next
  }

  /** The last save started or queued (see `persist`), and how many are running or queued. */
  private persisting: Promise<void> = Promise.resolve()
  private savesQueued = 0

  private async persistNow() {
    const unsaved = [...this.unsaved]
    this.unsaved.clear()
    if (unsaved.length) {
      await eventStoreOf(this.home).writeStaged()
      const rows = []
      for (const [id, entry] of unsaved) {
        const { session, key } = entry
        const cached = this.memory.get(id)
        if (!cached) continue
        if (this.ahead(session, id, cached)) continue
        // Folded past events staged while the write above ran (a step goes on meanwhile): a write may
        // still refuse them, so this cache waits for a later save (MySQL's upsert does not write them first).
        const staged = session.stagedFrom()
        if (staged !== undefined && cached.asOfSeq >= staged) {
          if (!this.unsaved.has(id)) this.unsaved.set(id, entry)
          this.schedulePersist()
          continue
        }
        rows.push({ sessionId: session.id, key, ...cached })
      }
      await saveProjectionCaches(this.home, this.database, rows)
    }
    this.forgetLeastRecent()
  }

  /**
   * Past `cachedSessions`, forget the sessions read (`get`) or advanced least recently — only those
   * with nothing unsaved, being folded or being written, so what goes is what the database holds (or a
   * shorter prefix's fold, when a write failed) — and tell `observeForgotten`'s listeners.
   */
  private forgetLeastRecent() {
    let excess = this.memory.sessions - this.cachedSessions
    if (excess <= 0) return
    const busy = new Set<string>()
    for (const id of [...this.unsaved.keys(), ...this.pending.keys(), ...this.saving.keys()]) busy.add(id.slice(0, id.indexOf('\u0000')))
    for (const sessionId of this.memory.leastRecent()) {
      if (excess <= 0) break
      if (busy.has(sessionId)) continue
      this.memory.forgetSession(sessionId)
      excess--
      for (const listener of this.forgottenObservers) {
        try {
          listener(sessionId)
        } catch (error) {
          this.log.warn('an observer of forgotten projections failed for %s: %s', sessionId, error)
        }
      }
    }
    // Sessions kept because they were busy: try again with the next save.
    if (excess > 0) this.schedulePersist()
  }

  /** A cache folded past the session's log (a refused step): forgotten, and true. */
  private ahead(session: Session, id: string, cached: Cached) {
    if (cached.asOfSeq < session.seq) return false
    if (this.memory.get(id) === cached) this.memory.delete(id)
    return true
  }

  /** Register a projection; disposing the registering plugin removes it. */
  register<S>(registration: ProjectionRegistration<S>) {
    const def = projectionDef(registration)
    if (this.defs.has(def.key)) {
      throw new TaskwardError('CONFIG_INVALID', `Projection "${def.key}" is already registered; each key has one owner.`)
    }
    this.defs.set(def.key, def)
    return this.ctx.effect(() => () => {
      if (this.defs.get(def.key) !== def) return
      this.defs.delete(def.key)
      for (const key of this.memory.ids()) if (key.endsWith('\u0000' + def.key)) this.memory.delete(key)
    })
  }

  /**
   * The state folded up to the session's last event. Concurrent calls share one fold. Resolves once
   * the database cache is written too, unless `background`: then as soon as the state is folded, with
   * the cache written behind (a hot path that must not wait for a durable write; `describe` and
   * `invalidate` wait for it, and a write lost to a crash only means a longer fold after a restart).
   */
  get<S = any>(session: Session, key: string, options: { background?: boolean } = {}): Promise<S> {
    // On the service itself, not through cordis' tracing view (every `this.x` there derives a context).
    const self = original(this)
    const id = session.id + '\u0000' + key
    const running = self.pending.get(id)
    if (running) return running.then(() => self.get(session, key, options))
    const work = self.advance(session, key, id, !options.background).finally(() => self.pending.delete(id))
    self.pending.set(id, work)
    return work
  }

  /**
   * The state when this process's in-memory cache already stands at the session's last event (kept
   * there by following the appends), else undefined: synchronous, reads and writes nothing. For checks
   * that run before every tool call or step; fall back to `get` when it answers undefined.
   */
  current<S = any>(session: Session, key: string): S | undefined {
    const self = original(this)
    const id = session.id + '\u0000' + key
    if (self.pending.has(id)) return
    const cached = self.memory.get(id)
    if (!cached || cached.version !== self.defs.get(key)?.version || cached.asOfSeq !== session.seq - 1) return
    return cached.state
  }

  /** Where a projection currently stands (for diagnostics and benchmarks). */
  async describe(session: Session, key: string) {
    await this.saved(session.id)
    const [row] = await this.database.get('taskward_projection', { sessionId: session.id, key })
    return row ? { version: row.version, asOfSeq: row.asOfSeq } : undefined
  }

  private async advance(session: Session, key: string, id: string, waitForSave: boolean): Promise<any> {
    const def = this.defs.get(key)
    if (!def) throw new TaskwardError('NOT_FOUND', `No projection "${key}" is registered; is its plugin loaded?`)
    let cached = this.memory.get(id)
    if (cached && this.ahead(session, id, cached)) cached = undefined
    if (!cached || cached.version !== def.version) {
      const [row] = await this.database.get('taskward_projection', { sessionId: session.id, key })
      cached = row && row.version === def.version && row.asOfSeq < session.seq
        ? { version: row.version, asOfSeq: row.asOfSeq, state: row.state }
        : { version: def.version, asOfSeq: -1, state: def.init() }
    }
    if (cached.asOfSeq >= session.seq - 1) {
      this.remember(id, cached)
      // Kept current by following the appends: saved with the next batched save (about a second
      // later, and when the host stops), not by every `get` — a hot path must not pay a write per
      // read, and a cache lost to a crash only means a longer fold after the restart.
      // A write in flight (started by a fold) is waited for like one's own.
      if (waitForSave) await this.saving.get(id)?.written
      return cached.state
    }
    let { state, asOfSeq } = cached
    // With a type filter the last folded event may be older than the log's end: the cache stands at
    // least where the log ended when the read began (events appended later are read or come next time)
    // — unless a step's staged events were refused meanwhile (the read writes them first on MySQL):
    // then only up to the first refused seq, which other events will take.
    const reading = { refusedFrom: Infinity }
    const end = session.seq - 1
    this.folding.set(id, reading)
    try {
      for await (const event of session.events(asOfSeq + 1, 2000, { types: def.types, frozen: false })) {
        state = def.apply(state, event)
        asOfSeq = event.seq
      }
    } finally {
      this.folding.delete(id)
    }
    // Read past a refusal (SQLite serves staged events from memory): what was folded is not the log's.
    if (asOfSeq >= reading.refusedFrom) return this.advance(session, key, id, waitForSave)
    const through = Math.min(end, reading.refusedFrom - 1)
    if (def.types && asOfSeq < through) {
      if (def.skipTo) state = def.skipTo(state, through)
      asOfSeq = through
    }
    const next = { version: def.version, asOfSeq, state }
    this.unsaved.delete(id)
    this.remember(id, next)
    const write = this.save(id, session.id, key, next)
    if (waitForSave) await write
    return state
  }

  /**
   * Write a cache, chained after the writes of the same projection in flight. Returns the write (it
   * rejects when the write fails); `saving` keeps a copy that only logs a failure.
   */
  private save(id: string, sessionId: string, key: string, cached: Cached): Promise<void> {
    const previous = this.saving.get(id)?.settled ?? Promise.resolve()
    const written = previous.then(() => saveProjectionCaches(this.home, this.database, [{ sessionId, key, ...cached }]))
    const settled: Promise<void> = written
      .catch((error) => this.log.warn('saving the projection cache %s of %s failed: %s', key, sessionId, error))
      .finally(() => { if (this.saving.get(id)?.settled === settled) this.saving.delete(id) })
    this.saving.set(id, { written, settled })
    return written
  }

  /** Wait for the cache writes in flight (of one session, or all). */
  private async saved(sessionId?: string) {
    const prefix = sessionId === undefined ? '' : sessionId + '\u0000'
    await Promise.all([...this.saving].filter(([id]) => id.startsWith(prefix)).map(([, write]) => write.settled))
  }

  /** Forget the cache of one session (or all) so that the next `get` rebuilds from seq 0. */
  async invalidate(session?: Session, key?: string) {
    // A write in flight would otherwise land after the removal and bring the cache back: a single
    // cache's, and a batched save (written in chunks over several turns of the event loop).
    await this.saved(session?.id)
    await this.persisting.catch(() => {})
    for (const id of this.memory.ids()) {
      const [sid, k] = id.split('\u0000')
      if ((!session || sid === session.id) && (!key || k === key)) this.memory.delete(id)
    }
    const query: any = {}
    if (session) query.sessionId = session.id
    if (key) query.key = key
    await this.database.remove('taskward_projection', query)
  }
}

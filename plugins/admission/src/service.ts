import type { Context } from 'cordis'
import { provideService } from '@taskward/cordis-compat'
import type { Agent, Session } from '@taskward/host'
import { loadedConfig, RecordPair, RecordReader, ReadRecord, SessionEvent, TaskwardError, readRecord, recordPairs } from '@taskward/protocol'
import { Config } from './config'
import { RecordIndexCache } from './index-cache'
import { ReaderRegistry } from './registry'

declare module 'cordis' {
  interface Context {
    admission: AdmissionService
  }
}

/**
 * The `admission` service: a registry of record readers and the host guard built on it. A session that
 * holds a record no registered reader reads is refused on `agent/before-resume` and before every step
 * (a step guard of the `agents` service) with `READER_UNAVAILABLE`, so an install that lacks a reader can never drive it ("no unsupervised
 * fallback"). See docs/records.md.
 */
export class AdmissionService {
  static readonly provide = 'admission'
  static inject = ['sessions', 'projections']
  static Config = Config

  // Cordis hands callers a tracing view of the service (assignments through it are lost and property
  // reads are slow), so the state lives in two plain objects that the hooks use directly.
  private readonly registry: ReaderRegistry
  private readonly indexes: RecordIndexCache
  private readonly home: Context
  /** The calling plugin's context (the tracing view callers get sets it; see `provideService`). */
  protected ctx: Context

  constructor(ctx: Context, config: Partial<Config> = {}) {
    this.ctx = ctx
    const { persistEvery, liveSessions } = Config(loadedConfig('admission', config))
    const indexes = new RecordIndexCache(ctx, persistEvery, liveSessions)
    const registry = new ReaderRegistry(indexes)
    indexes.onDropped = (sessionId) => registry.forget(sessionId)
    this.indexes = indexes
    this.registry = registry
    this.home = ctx
    // An observer, not a `session/event` listener: a direct call on every append (see `sessions.observe`).
    ctx.sessions.observe((session, event) => indexes.observe(session, event))
    // A refused step's events were observed as they were staged: what followed them is dropped, and
    // the next check reads the index back from the log as written.
    ctx.sessions.observeRollback((session) => {
      indexes.rolledBack(session.id)
      registry.forget(session.id)
    })
    // The host forgot the session's projection caches (past its memory bound): so does this plugin, or
    // every session ever checked would stay in memory. Absent on a host that never forgets.
    ctx.projections.observeForgotten?.((sessionId) => {
      indexes.forget(sessionId)
      registry.forget(sessionId)
    })
    ctx.on('agent/before-resume', (session) => registry.refusal(session))
    // A step guard, not an `agent/before-step` listener: a turn calls it directly, and it answers
    // synchronously from the memoized verdict while the session's index is current.
    ctx.inject(['agents'], (ctx) => {
      ctx.agents.stepGuard((agent: Agent) => registry.refusalNow(agent.session))
    })
    // Last: dependents may start as soon as it is provided.
    provideService(ctx, 'admission', this)
  }

  /**
   * Register a reader for as long as the calling plugin is loaded: disposing that plugin withdraws it
   * (and sessions that need it are refused again). Returns the disposer.
   */
  registerReader(reader: RecordReader) {
    return this.registry.add(this.ctx, reader)
  }

  /** The readers registered now, in registration order. */
  readers(): readonly RecordReader[] {
    return [...this.registry.readers]
  }

  /** Read one `extension/record` event with the registered readers (see `readRecord`). */
  read<T = any>(event: SessionEvent): ReadRecord<T> {
    return readRecord<T>(this.registry.readers, event)
  }

  /** The pairs in the session's records that no registered reader reads; empty when it may run. */
  async check(session: Session | string): Promise<RecordPair[]> {
    return this.registry.check(typeof session === 'string' ? await this.home.sessions.get(session) : session)
  }

  /** Every `(namespace, version)` pair the session's records use, read or not. */
  async pairs(session: Session | string): Promise<RecordPair[]> {
    return recordPairs(await this.indexes.get(typeof session === 'string' ? await this.home.sessions.get(session) : session))
  }

  /** What the host guard answers for the session: a coded refusal, or undefined when it may run. */
  async refusal(session: Session | string): Promise<TaskwardError | undefined> {
    return this.registry.refusal(typeof session === 'string' ? await this.home.sessions.get(session) : session)
  }
}

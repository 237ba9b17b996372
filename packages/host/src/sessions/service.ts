import { Context, Service } from 'cordis'
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { SessionEvent, TaskwardError } from '@taskward/protocol'
import { Session, nextSeqOf, type Acknowledgement } from './session'
import { eventStoreOf } from './event-store'
import { defineTables } from '../tables'
import { checkId } from './ids'
import { original } from '../original'

export type EventObserver = (session: Session, event: SessionEvent) => void
/** Told that a session's events from `fromSeq` on were seen but never written (see `observeRollback`). */
export type RollbackObserver = (session: Session, fromSeq: number) => void

export interface CreateSessionOptions {
  id?: string
  cwd: string
  preset?: string
  parentId?: string
  role?: string
  model?: string
  /**
   * `written`: resolve once the row is written, before its flush (SQLite; elsewhere as `durable`) —
   * for a session whose first consequence is a model request (a reviewer's); see `Session.appendBatch`.
   */
  ack?: Acknowledgement
}

declare module 'cordis' {
  interface Context {
    sessions: Sessions
  }
  interface Events {
    /** Emitted once an event is in the log, in seq order (maybe before its flush: `session.whenDurable()`). */
    'session/event'(session: Session, event: SessionEvent): void
  }
}

/** Durable sessions: create, look up, list. One `Session` object per id in this process. */
export class Sessions extends Service {
  static inject = ['database']
  private live = new Map<string, Promise<Session>>()
  /** Plain listeners of committed events (see `observe`). */
  private readonly observers = new Set<EventObserver>()
  /** Listeners of refused staged events (see `observeRollback`). */
  private readonly rollbacks = new Set<RollbackObserver>()
  /** The service's own context: sessions outlive the plugin that happened to open them. */
  private readonly home: Context
  /** The database itself for `create`, read once (a required inject: this service restarts when it changes). */
  private readonly database: Context['database']

  constructor(ctx: Context) {
    super(ctx, 'sessions', true)
    this.home = ctx
    this.database = original(ctx.database)
    defineTables(ctx)
  }

  /**
   * Call `listener` for every committed event, in order, before `session/event` is emitted; disposing
   * the calling plugin removes it. For kernel services on the append path: a plain call, without
   * cordis' per-listener tracing, which costs more than the insert. A throwing observer is logged
   * and never fails the append.
   */
  observe(listener: EventObserver) {
    const observers = this.observers
    // Called through `ctx.sessions`, the listener arrives wrapped in cordis' tracing proxy, which only
    // passes each argument through its tracing view: a session and an event have none, so the function
    // itself is called (the proxy's dispatch cost more than most observers).
    listener = original(listener)
    return this.ctx.effect(() => {
      observers.add(listener)
      return () => observers.delete(listener)
    })
  }

  /**
   * Call `listener(session, fromSeq)` when events this process staged and announced (a step's) were
   * refused: nothing of the session from `fromSeq` on is in the log, and those seqs will be taken by
   * other events (this host's next appends, or another host's). Whoever folded the announced events
   * (a cache, a mirror, a window) must forget what it folded from `fromSeq` on, or it would show a
   * state the log never had once the log grows past it again. Disposing the caller removes it.
   */
  observeRollback(listener: RollbackObserver) {
    const rollbacks = this.rollbacks
    listener = original(listener)
    return this.ctx.effect(() => {
      rollbacks.add(listener)
      return () => rollbacks.delete(listener)
    })
  }

  /** How many observers are registered now (diagnostics: a closed stream must leave none behind). */
  observerCount(): number {
    return this.observers.size
  }

  async create(options: CreateSessionOptions): Promise<Session> {
    if (!options?.cwd) throw new TaskwardError('BAD_REQUEST', 'A session needs a working directory (cwd).')
    const id = options.id ?? randomUUID()
    checkId(id)
    if (!/^[\w.-]{1,128}$/.test(id)) {
      throw new TaskwardError('BAD_REQUEST', `Session id "${id}" may only hold letters, digits, ".", "_" and "-".`)
    }
    // A caller's id may be taken; a fresh UUID is not (and the primary key still refuses a duplicate).
    const database = this.database
    if (options.id !== undefined) {
      const [existing] = await database.get('taskward_session', { id })
      if (existing) throw new TaskwardError('BAD_REQUEST', `Session ${id} already exists; open it with sessions.get().`)
    }
    const row = {
      id,
      cwd: resolve(options.cwd),
      preset: options.preset ?? 'default',
      parentId: options.parentId ?? '',
      role: options.role ?? 'main',
      model: options.model ?? '',
      createdAt: Date.now(),
    }
    const store = options.ack === 'written' ? eventStoreOf(this.home, database) : undefined
    let flush: Promise<void> | undefined
    if (store?.writtenAtOnce && store.insertSessionRow) flush = store.insertSessionRow(row)
    else await database.create('taskward_session', row)
    const session = new Session(this.home, row, 0, this.observers, this.rollbacks)
    // Its flush holds the session's `durable()` back, as a written commit's does.
    if (flush) session.keepUntilDurable(flush)
    this.live.set(id, Promise.resolve(session))
    return session
  }

  /** The session, or `SESSION_NOT_FOUND`. */
  get(id: string): Promise<Session> {
    try {
      checkId(id)
    } catch (error) {
      return Promise.reject(error)
    }
    let pending = this.live.get(id)
    if (!pending) {
      pending = this.load(id)
      this.live.set(id, pending)
      pending.catch(() => this.live.delete(id))
    }
    return pending
  }

  async has(id: string) {
    checkId(id)
    return (await this.home.database.get('taskward_session', { id })).length > 0
  }

  private async load(id: string) {
    const [row] = await this.home.database.get('taskward_session', { id })
    if (!row) throw new TaskwardError('SESSION_NOT_FOUND', `No session ${id}; list sessions to find the right id.`, { sessionId: id })
    return new Session(this.home, row, await nextSeqOf(this.home, id), this.observers, this.rollbacks)
  }

  /** Every session, oldest first; `parentId` filters the sessions that work for one session. */
  async list(filter: { parentId?: string } = {}): Promise<Session[]> {
    const query = filter.parentId === undefined ? {} : { parentId: filter.parentId }
    const rows = await this.home.database.select('taskward_session', query).orderBy('createdAt', 'asc').execute()
    return Promise.all(rows.map((row) => this.get(row.id)))
  }
}

export { Session }

import type { Context } from 'cordis'
import { SessionEvent, TaskwardError } from '@taskward/protocol'
import type { SessionRow } from '../tables'
import { sessionEventEmitter } from './emit'
import { eventStoreOf, type EventStore, type StoredEvent } from './event-store'
import type { Fence } from './lease'
import { StepStaging, type Acknowledgement } from './step-staging'

export type { Acknowledgement }

const MAX_APPEND_RETRIES = 5

export interface AppendOptions {
  /** The first event must get exactly this seq (`SEQ_CONFLICT` otherwise, nothing written). */
  expectSeq?: number
  /** Commit now and resolve once durable, even in the middle of a step (see `appendBatch`). */
  commit?: boolean
  /**
   * What the promise of a commit waits for (see `appendBatch`): `durable` (the default) or `written` —
   * in the log, in order, seen by every later read and write, and on its way to disk. For a decision
   * whose only consequence is a model request, which is not an effect: every effect still waits
   * (`durable()` before tools, `settled()` before an HTTP answer, a command's reply).
   */
  ack?: Acknowledgement
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}

/**
 * One durable, append-only event log. Appends are serialized in this process; the `(sessionId, seq)`
 * primary key keeps two processes from committing the same seq (the loser re-reads and retries).
 */
export class Session {
  readonly id: string
  readonly cwd: string
  readonly preset: string
  readonly parentId: string
  role: string
  model: string
  readonly createdAt: number
  /** The seq the next append will get. */
  seq: number
  /** The lease this host drives the session under (MySQL only): every append carries it. */
  fence?: Fence
  private tail: Promise<unknown> = Promise.resolve()
  /** Appends started and not yet settled. */
  private pending = 0
  private cachedStore?: EventStore
  /** The open step, staged batches and flushes still running (see `openStep`, `durable`). */
  private readonly staging: StepStaging
  private readonly emit: (session: Session, event: SessionEvent) => void

  constructor(private ctx: Context, row: SessionRow, nextSeq: number, private observers: ReadonlySet<(session: Session, event: SessionEvent) => void> = new Set(),
    private rollbacks: ReadonlySet<(session: Session, fromSeq: number) => void> = new Set()) {
    this.id = row.id
    this.cwd = row.cwd
    this.preset = row.preset
    this.parentId = row.parentId
    this.role = row.role
    this.model = row.model
    this.createdAt = row.createdAt
    this.seq = nextSeq
    this.emit = sessionEventEmitter(ctx)
    this.staging = new StepStaging(this, () => this.store, (first) => this.rollBack(first))
  }

  private get store(): EventStore {
    if (!this.cachedStore || this.cachedStore.closed) this.cachedStore = eventStoreOf(this.ctx)
    return this.cachedStore
  }

  /**
   * Append an event; resolves with the frozen event once it is committed to the database (inside a
   * step: once staged, unless `commit`, see `appendBatch`).
   */
  append<D = any>(type: string, data: D, options: AppendOptions = {}): Promise<SessionEvent<D>> {
    return this.appendBatch([{ type, data }], options).then(([event]) => event)
  }

  /**
   * Append events at consecutive seqs: no other append of this process comes between them. With
   * `expectSeq`, the first one must get exactly that seq — a record that names its own seq (or was
   * checked by folding it at that seq) is never moved: `SEQ_CONFLICT` instead, nothing written, and
   * the caller re-reads and decides again. With `commit`, the events are committed (and the promise
   * resolves once durable) even in the middle of a step: for a writer outside the step that
   * acknowledges what it appended (an operator's command and its reply), which must neither be
   * answered before it is durable nor go down with the step's commit. With `ack: 'written'` (on a
   * store that writes at once, SQLite) a commit resolves once written and its flush runs on:
   * `durable()`, `flushed()` and `whenDurable()` wait for it, and a flush that fails fails the store,
   * so nothing written after it is acknowledged either.
   */
  appendBatch<D = any>(entries: { type: string, data: D }[], options: AppendOptions = {}): Promise<SessionEvent<D>[]> {
    if (!entries.length) {
      return Promise.reject(new TaskwardError('BAD_REQUEST', 'An append needs at least one event; nothing was written.'))
    }
    if (entries.some((entry) => typeof entry.type !== 'string' || !entry.type)) {
      return Promise.reject(new TaskwardError('BAD_REQUEST', 'Every event needs a non-empty type; nothing was written.'))
    }
    // An idle log starts the commit at once (no extra turn of the promise queue on the hot path).
    const run = this.pending ? this.tail.then(() => this.commitBatch(entries, options)) : this.commitBatch(entries, options)
    this.pending++
    const settled = run.then(() => { this.pending-- }, () => { this.pending-- })
    this.tail = settled
    // The flush is waited for outside the queue: the next append (a step's, staged) need not wait for it.
    return run.then(({ events, flush }) => flush ? flush.then(() => events) : events)
  }

  /**
   * Open a step: from now until `commitStep`, appends are staged instead of committed one by one —
   * each gets its seq, is frozen, and goes to the observers and `session/event` at once (so what runs
   * in the step sees it; reads of this process see it too), and the promise resolves then. The store
   * writes staged events before any other write of its own, and `commitStep` writes the rest in one
   * transaction with one flush: an append is acknowledged as durable only by its step's commit (or,
   * for an HTTP change, by the connection's `settled()` barrier).
   */
  openStep() {
    this.staging.open()
  }

  /**
   * Close the open step: write what it staged now (one transaction, unless another write of the store
   * took some of it earlier) and resolve once all of it is as durable as configured — with `ack:
   * 'written'`, on a store that writes at once, once it is written (the flush runs on; `durable()` waits
   * for it). The step is closed at once: appends from here on are committed as usual. On a failure
   * nothing of the failed batch is in the log, and the next append takes the first seq it held.
   */
  commitStep({ ack = 'durable' }: { ack?: Acknowledgement } = {}): Promise<void> {
    return this.staging.commit(ack)
  }

  /**
   * Another process (a second host on the same store) appended up to `seenSeq`, as a read of the
   * database showed: the next append of this process starts after it instead of colliding first.
   */
  catchUp(seenSeq: number) {
    if (seenSeq >= this.seq) this.seq = seenSeq + 1
  }

  private conflict(expectSeq: number) {
    return new TaskwardError('SEQ_CONFLICT',
      `Session ${this.id} moved on past seq ${expectSeq} before this write; nothing was written. Read the session again and retry.`,
      { sessionId: this.id, expectSeq, seq: this.seq })
  }

  /**
   * Write (or stage) one batch, in this session's append order. On a store that writes at once the
   * flush is not waited for here but returned (`flush`, unless `ack` is `written`), for the caller to
   * wait for outside the order: appends after it (a turn's, staged) do not queue behind a disk flush.
   */
  private async commitBatch<D>(entries: { type: string, data: D }[], { expectSeq, commit, ack = 'durable' }: AppendOptions): Promise<{ events: SessionEvent<D>[], flush?: Promise<void> }> {
    const store = this.store
    // One JSON text per event: what is stored, and (parsed back) exactly what a reader gets later.
    const texts = entries.map(({ data }) => data === undefined ? 'null' : JSON.stringify(data))
    if (this.staging.isOpen && !commit) {
      if (expectSeq !== undefined && expectSeq !== this.seq) throw this.conflict(expectSeq)
      return { events: this.announce(this.staging.stage(entries, texts)) }
    }
    const atOnce = store.writtenAtOnce
    // Staged batches of this session come first: a committed event never stands after a hole. Where
    // the store writes at once, their write is what counts here; this commit's flush covers theirs.
    if (this.staging.hasUnsettled) await this.staging.settle(atOnce ? 'written' : 'durable')
    if (expectSeq !== undefined && expectSeq !== this.seq) throw this.conflict(expectSeq)
    let stored: StoredEvent[] | undefined
    let flush: Promise<void> | undefined
    for (let attempt = 0; attempt < MAX_APPEND_RETRIES && !stored; attempt++) {
      const time = Date.now()
      const batch = entries.map(({ type }, i) => ({ seq: this.seq + i, type, time, text: texts[i] }))
      try {
        const durable = store.insert(this.id, batch, this.fence)
        if (durable && atOnce) {
          this.staging.keep(durable)
          if (ack === 'durable') flush = durable
        } else if (durable) await durable
        stored = batch
      } catch (error: any) {
        if (error?.code !== 'duplicate-entry') throw error
        // Another process took these seqs: catch up, and try the next ones unless the seq was promised.
        const taken = this.seq
        this.seq = await store.nextSeq(this.id)
        if (expectSeq !== undefined) throw this.conflict(taken)
      }
    }
    if (!stored) {
      throw new TaskwardError('SEQ_CONFLICT',
        `Session ${this.id}: another writer kept taking the next seq; retry the operation.`, { sessionId: this.id })
    }
    this.seq = stored[stored.length - 1].seq + 1
    return { events: this.announce(stored), flush }
  }

  /**
   * Undefined when every event appended so far is as durable as configured; else a promise of whether
   * the staged ones are (true) or were refused (false). It neither writes nor hurries the step: for
   * whoever shows events outside the process (the console's live stream), which must not show one a
   * crash or a refused commit can still take back.
   */
  whenDurable(): Promise<boolean> | undefined {
    return this.staging.whenDurable()
  }

  /**
   * Keep the flush of a write made for this session (its row, see `Sessions.create`) until it ends:
   * `durable()`, `flushed()` and `whenDurable()` wait for it. Never an unhandled rejection.
   */
  keepUntilDurable(durable: Promise<void>) {
    this.staging.keep(durable)
  }

  /**
   * Resolve once every commit of this session made outside a step (an `ack: 'written'` one, say) is
   * durable; rejects with the store's failure; undefined when none is still flushing. Writes nothing:
   * a step's staged events stay staged.
   */
  flushed(): Promise<void> | undefined {
    return this.staging.flushed()
  }

  /**
   * The first seq of this session's staged events whose outcome is not known yet (a write may still
   * refuse them), or undefined: whoever saves state folded from the log must not save past it.
   */
  stagedFrom(): number | undefined {
    return this.staging.stagedFrom()
  }

  /**
   * Write what this session staged and resolve once it is durable (rejects, nothing more written,
   * when it was refused): for an effect outside the log that must not come before its record.
   */
  durable(): Promise<void> {
    return this.staging.durable()
  }

  /** Staged events from `first` on were refused: their seqs are free again, and whoever folded them is told. */
  private rollBack(first: number) {
    this.seq = Math.min(this.seq, first)
    for (const listener of this.rollbacks) {
      try {
        listener(this, first)
      } catch (error) {
        this.ctx.logger('sessions').warn('a rollback observer failed at %s seq %d: %s', this.id, first, error)
      }
    }
  }

  /** The frozen events as a reader gets them, after the observers and `session/event` saw them. */
  private announce<D>(stored: StoredEvent[]): SessionEvent<D>[] {
    const events = stored.map(({ seq, type, time, text }) => deepFreeze({ seq, type, time, data: JSON.parse(text) as D }))
    for (const event of events) {
      for (const observer of this.observers) {
        try {
          observer(this, event)
        } catch (error) {
          this.ctx.logger('sessions').warn('an event observer failed at %s seq %d: %s', this.id, event.seq, error)
        }
      }
      try {
        this.emit(this, event)
      } catch (error) {
        // The event is in the log: a failing listener must not make the append look failed (a caller
        // would retry and write it twice).
        this.ctx.logger('sessions').warn('a session/event listener failed at %s seq %d: %s', this.id, event.seq, error)
      }
    }
    return events
  }

  /**
   * Events in seq order from `from`, at most `limit` of them (frozen). `types` keeps only events of
   * those types, read through the `(sessionId, type, seq)` index.
   */
  async read({ from = 0, limit = 500, types }: { from?: number, limit?: number, types?: readonly string[] } = {}): Promise<SessionEvent[]> {
    const events = await this.page(from, limit, types)
    for (const event of events) deepFreeze(event)
    return events
  }

  /** A page of fresh, unfrozen event objects: for folds, which own what they read. */
  page(from: number, limit: number, types?: readonly string[]): Promise<SessionEvent[]> {
    if (types && !types.length) return Promise.resolve([])
    return this.store.read(this.id, { from, limit, types })
  }

  /** One event by seq, or undefined. */
  async event(seq: number): Promise<SessionEvent | undefined> {
    const [row] = await this.read({ from: seq, limit: 1 })
    return row?.seq === seq ? row : undefined
  }

  /**
   * Every event from `from` on, read in pages. Frozen unless `frozen: false` (a fold that keeps
   * nothing it does not own may skip the cost); `types` filters through the type index.
   */
  async *events(from = 0, pageSize = 2000, options: { types?: readonly string[], frozen?: boolean } = {}): AsyncGenerator<SessionEvent> {
    let next = from
    while (true) {
      const page = options.frozen === false ? await this.page(next, pageSize, options.types) : await this.read({ from: next, limit: pageSize, types: options.types })
      for (const event of page) yield event
      if (page.length < pageSize) return
      next = page[page.length - 1].seq + 1
    }
  }

  toJSON() {
    return { id: this.id, cwd: this.cwd, preset: this.preset, parentId: this.parentId, role: this.role, model: this.model, createdAt: this.createdAt, seq: this.seq }
  }
}

export function nextSeqOf(ctx: Context, sessionId: string) {
  return eventStoreOf(ctx).nextSeq(sessionId)
}

import type { Context } from 'cordis'
import { SessionEvent, TaskwardError } from '@taskward/protocol'
import type { SessionRow } from '../tables'

const MAX_APPEND_RETRIES = 5

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
  private tail: Promise<unknown> = Promise.resolve()

  constructor(private ctx: Context, row: SessionRow, nextSeq: number) {
    this.id = row.id
    this.cwd = row.cwd
    this.preset = row.preset
    this.parentId = row.parentId
    this.role = row.role
    this.model = row.model
    this.createdAt = row.createdAt
    this.seq = nextSeq
  }

  /** Append an event; resolves with the frozen event once it is committed to the database. */
  append<D = any>(type: string, data: D): Promise<SessionEvent<D>> {
    return this.appendBatch([{ type, data }]).then(([event]) => event)
  }

  /**
   * Append events at consecutive seqs: no other append of this process comes between them. With
   * `expectSeq`, the first one must get exactly that seq — a record that names its own seq (or was
   * checked by folding it at that seq) is never moved: `SEQ_CONFLICT` instead, nothing written, and
   * the caller re-reads and decides again.
   */
  appendBatch<D = any>(entries: { type: string, data: D }[], options: { expectSeq?: number } = {}): Promise<SessionEvent<D>[]> {
    if (!entries.length || entries.some((entry) => typeof entry.type !== 'string' || !entry.type)) {
      return Promise.reject(new TaskwardError('BAD_REQUEST', 'Every event needs a non-empty type.'))
    }
    const run = this.tail.then(() => this.commitBatch(entries, options.expectSeq))
    this.tail = run.catch(() => {})
    return run
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

  private async commitBatch<D>(entries: { type: string, data: D }[], expectSeq?: number): Promise<SessionEvent<D>[]> {
    if (expectSeq !== undefined && expectSeq !== this.seq) throw this.conflict(expectSeq)
    const events: SessionEvent<D>[] = []
    for (const { type, data } of entries) {
      // Round-trip through JSON so that what is returned is exactly what a reader gets back later.
      const stored = data === undefined ? null : JSON.parse(JSON.stringify(data))
      events.push(await this.commitOne(type, stored, expectSeq !== undefined))
    }
    for (const event of events) {
      try {
        this.ctx.emit('session/event', this, event)
      } catch (error) {
        // The event is durable: a failing listener must not make the append look failed (a caller
        // would retry and write it twice).
        this.ctx.logger('sessions').warn('a session/event listener failed at %s seq %d: %s', this.id, event.seq, error)
      }
    }
    return events
  }

  private async commitOne<D>(type: string, stored: D, exact: boolean): Promise<SessionEvent<D>> {
    for (let attempt = 0; attempt < MAX_APPEND_RETRIES; attempt++) {
      const event: SessionEvent<D> = { seq: this.seq, type, time: Date.now(), data: stored }
      try {
        await this.ctx.database.create('taskward_event', { sessionId: this.id, ...event })
      } catch (error: any) {
        if (error?.code !== 'duplicate-entry' && !/UNIQUE|Duplicate|PRIMARY/i.test(String(error?.message))) throw error
        // Another process took this seq: catch up, and try the next one unless the seq was promised.
        const taken = this.seq
        this.seq = await nextSeqOf(this.ctx, this.id)
        if (exact) throw this.conflict(taken)
        continue
      }
      this.seq = event.seq + 1
      return deepFreeze(event)
    }
    throw new TaskwardError('SEQ_CONFLICT',
      `Session ${this.id}: another writer kept taking the next seq; retry the operation.`, { sessionId: this.id })
  }

  /** Events in seq order from `from`, at most `limit` of them. */
  async read({ from = 0, limit = 500 }: { from?: number, limit?: number } = {}): Promise<SessionEvent[]> {
    const rows = await this.ctx.database.select('taskward_event')
      .where({ sessionId: this.id, seq: { $gte: from } })
      .orderBy('seq', 'asc')
      .limit(limit)
      .execute()
    return rows.map((row) => deepFreeze({ seq: row.seq, type: row.type, time: row.time, data: row.data }))
  }

  /** One event by seq, or undefined. */
  async event(seq: number): Promise<SessionEvent | undefined> {
    const [row] = await this.read({ from: seq, limit: 1 })
    return row?.seq === seq ? row : undefined
  }

  /** Every event from `from` on, read in pages; for folds. */
  async *events(from = 0, pageSize = 2000): AsyncGenerator<SessionEvent> {
    let next = from
    while (true) {
      const page = await this.read({ from: next, limit: pageSize })
      for (const event of page) yield event
      if (page.length < pageSize) return
      next = page[page.length - 1].seq + 1
    }
  }

  toJSON() {
    return { id: this.id, cwd: this.cwd, preset: this.preset, parentId: this.parentId, role: this.role, model: this.model, createdAt: this.createdAt, seq: this.seq }
  }
}

export async function nextSeqOf(ctx: Context, sessionId: string) {
  const [last] = await ctx.database.select('taskward_event')
    .where({ sessionId })
    .orderBy('seq', 'desc')
    .limit(1)
    .project(['seq'])
    .execute()
  return last ? Number(last.seq) + 1 : 0
}

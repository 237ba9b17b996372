import type { Context } from 'cordis'
import type { SessionEvent } from '@taskward/protocol'
import { driverOf, storeDriver } from '../store/health'
import type { Fence } from './lease'
import { StagedBatches, type StagedBatch } from './staged'
import { MySQLEventStore } from './mysql-event-store'
import { MinatoEventStore } from './minato-event-store'
import { sqliteHandleOf, type SQLiteHandle } from './sqlite-handle'
import type { SessionRow } from '../tables'

/** An event as stored: its data already serialized, once, as the JSON text the column holds. */
export interface StoredEvent {
  seq: number
  type: string
  time: number
  text: string
}

export interface ReadOptions {
  from: number
  limit: number
  /** Only events of these types (served by the `(sessionId, type, seq)` index). */
  types?: readonly string[]
}

/**
 * The event log's hot paths, below minato (which still declares and migrates the tables): append a
 * batch in one transaction, read a page, find the next seq. A duplicate `(sessionId, seq)` rejects
 * with an error whose `code` is `duplicate-entry`, like minato's.
 */
export interface EventStore {
  /**
   * Resolves once durable; `undefined` when the insert is already as durable as configured. With a
   * `fence` (MySQL leases) nothing is written unless the session's lease still has that token and
   * has not expired, checked in the insert itself: `LEASE_LOST` otherwise.
   */
  insert(sessionId: string, events: StoredEvent[], fence?: Fence): Promise<void> | undefined
  read(sessionId: string, options: ReadOptions): Promise<SessionEvent[]>
  nextSeq(sessionId: string): Promise<number>
  /**
   * Keep `batch` (a step's events, see `Session.openStep`) to be written with the next write of this
   * store, before it: every insert and (SQLite) minato write first writes what is staged, in staging
   * order, so nothing committed can depend on a staged event that is not. Reads see staged events
   * (SQLite serves them from memory; MySQL writes them first).
   */
  stage(batch: StagedBatch): void
  /**
   * Write what is staged now (one transaction on SQLite); each batch then carries its outcome. The
   * promise resolves once what it wrote is as durable as configured (never rejects: the steps report).
   */
  writeStaged(): Promise<void> | undefined
  /**
   * Write what is staged and resolve once every staged event written so far is as durable as
   * configured (never rejects): the barrier before acknowledging a change to anyone outside.
   */
  settled(): Promise<void> | undefined
  /**
   * True when an `insert` (or `writeStaged`) that returned without throwing has already put its events
   * in the log, in order, so that every later read and write of this process sees them, and its promise
   * only makes them durable (SQLite once open: the commit is synchronous, the flush is not). False when
   * the promise carries the write itself (MySQL, other minato drivers): nothing is known before it settles.
   * Read it before the call.
   */
  readonly writtenAtOnce: boolean
  /**
   * Only where `writtenAtOnce`: write a new session's row at once (a taken id rejects with a
   * `duplicate-entry` error, thrown) and return its flush, like `insert`'s.
   */
  insertSessionRow?(row: SessionRow): Promise<void> | undefined
  /** The driver behind it was stopped: look the store up again. */
  readonly closed: boolean
}


const placeholders = (count: number) => Array(count).fill('?').join(', ')

/**
 * SQLite (sql.js): prepared statements on the driver's own handle. Everything between BEGIN and
 * COMMIT is synchronous, so no other write of this process can come between; the driver's
 * `committed()` then makes the commit as durable as configured (fsync with group commit).
 */
class SQLiteEventStore implements EventStore {
  private staged = new StagedBatches()

  constructor(private handle: SQLiteHandle) {
    // A minato write (a projection cache, a session row) must not become durable before the staged
    // events it may derive from: the driver asks for them to be written first.
    handle.driver.beforeWrite = () => this.writeStaged()
    // Asked at once, so that `writtenAtOnce` holds from the tables' preparation on, not from the first
    // write after it (a failure is asked again by the next write, which reports it).
    handle.ready().catch(() => {})
  }

  private get driver() {
    return this.handle.driver
  }

  stage(batch: StagedBatch) {
    this.staged.add(batch)
  }

  /** The durability of the last insert (a flush covers every commit before it). */
  private lastWrite?: Promise<void>

  settled() {
    this.writeStaged()
    return this.lastWrite
  }

  get writtenAtOnce() {
    return this.handle.isReady
  }

  writeStaged(): Promise<void> | undefined {
    if (!this.staged.size) return
    // Tables that cannot be prepared: the staged batches carry the refusal (their steps report it);
    // callers that do not wait for this (settled, beforeWrite) are left nothing unhandled.
    if (!this.handle.isReady) return this.handle.ready().then(() => this.writeStaged(), (error) => StagedBatches.refuse(this.staged.take(), error))
    try {
      return this.insert('', [])?.catch(() => {})
    } catch {
      // Each batch carries the failure; its step reports it.
    }
  }

  get closed() {
    return this.handle.closed
  }

  /** Staged batches and then `events`, in ONE transaction: one commit, one flush for all of them. */
  insert(sessionId: string, events: StoredEvent[]): Promise<void> | undefined {
    if (!this.handle.isReady) return this.handle.ready().then(() => this.insert(sessionId, events))
    const batches: StagedBatch[] = []
    for (const batch of this.staged.take()) {
      if (batch.previous?.failure) StagedBatches.refuse([batch], batch.previous.failure)
      else batches.push(batch)
    }
    let durable: Promise<void> | undefined
    try {
      this.handle.guard(() => {
        const insert = this.handle.statement('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES (?, ?, ?, ?, ?)')
        if (events.length === 1 && !batches.length) {
          const [event] = events
          insert.run([sessionId, event.seq, event.type, event.time, event.text])
          return
        }
        this.handle.transaction(() => {
          for (const batch of batches) {
            for (const event of batch.events) insert.run([batch.sessionId, event.seq, event.type, event.time, event.text])
          }
          for (const event of events) insert.run([sessionId, event.seq, event.type, event.time, event.text])
        })
      })
      durable = this.driver.committed?.()
    } catch (error) {
      StagedBatches.refuse(batches, error)
      throw error
    }
    StagedBatches.settle(batches, durable)
    // Every insert: a commit acknowledged before its flush (see `Session.appendBatch`'s `ack`) is
    // covered by `settled()` too.
    this.lastWrite = durable?.catch(() => {})
    return durable
  }

  insertSessionRow(row: SessionRow): Promise<void> | undefined {
    // Staged events first, as before every minato write (a reviewer's row follows its job's step).
    this.writeStaged()
    this.handle.guard(() => {
      this.handle.statement('INSERT INTO `taskward_session` (`id`, `cwd`, `preset`, `parentId`, `role`, `model`, `createdAt`) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run([row.id, row.cwd, row.preset, row.parentId, row.role, row.model, row.createdAt])
    })
    const durable = this.driver.committed?.()
    this.lastWrite = durable?.catch(() => {})
    return durable
  }

  /** The stored page, completed with the session's staged events (reading writes nothing). */
  async read(sessionId: string, options: ReadOptions) {
    if (!this.handle.isReady) await this.handle.ready()
    const { from, limit, types } = options
    const page = this.handle.guard(() => this.readPage(sessionId, from, limit, types) ?? this.readRows(sessionId, from, limit, types))
    return this.staged.merge(sessionId, page, options)
  }

  private selection(types: readonly string[] | undefined) {
    const filter = types ? ` AND \`type\` IN (${placeholders(types.length)})` : ''
    return `SELECT \`seq\`, \`type\`, \`time\`, \`data\` FROM \`taskward_event\` WHERE \`sessionId\` = ? AND \`seq\` >= ?${filter} ORDER BY \`seq\` LIMIT ?`
  }

  /**
   * A page as ONE JSON array text built by SQLite, parsed by one `JSON.parse`: a row at a time costs
   * four wasm column reads and a parse per row, more than the events' own parse. `data` holds the
   * JSON text the host wrote (`JSON.stringify`), spliced in as is; `time` is printed with 17 digits,
   * which reads back as the same double. Undefined (so that `readRows` reads the page row by row, and
   * a damaged row fails there as it always did) unless the array holds exactly the rows counted, in
   * seq order from `from`.
   */
  private readPage(sessionId: string, from: number, limit: number, types?: readonly string[]): SessionEvent[] | undefined {
    const statement = this.handle.statement('SELECT count(*), \'[\' || group_concat(\'{"seq":\' || `seq` || \',"type":\' || json_quote(`type`)'
      + ' || \',"time":\' || iif(`time` IS NULL, \'null\', iif(`time` = CAST(`time` AS INTEGER) AND abs(`time`) < 9007199254740992, CAST(`time` AS INTEGER), printf(\'%!.17g\', `time`))) || \',"data":\' || ifnull(`data`, \'null\') || \'}\', \',\') || \']\''
      + ` FROM (${this.selection(types)})`)
    let count: number
    let text: string | null
    try {
      statement.bind(types ? [sessionId, from, ...types, limit] : [sessionId, from, limit])
      statement.step()
      ;[count, text] = statement.get()
    } finally {
      statement.reset()
    }
    if (!count) return []
    let events: SessionEvent[]
    try {
      events = JSON.parse(text!)
    } catch {
      return undefined
    }
    if (!Array.isArray(events) || events.length !== count) return undefined
    let previous = from - 1
    for (const event of events) {
      if (typeof event?.seq !== 'number' || event.seq <= previous) return undefined
      previous = event.seq
    }
    return events
  }

  private readRows(sessionId: string, from: number, limit: number, types?: readonly string[]) {
    const statement = this.handle.statement(this.selection(types))
    const events: SessionEvent[] = []
    try {
      statement.bind(types ? [sessionId, from, ...types, limit] : [sessionId, from, limit])
      while (statement.step()) {
        const [seq, type, time, data] = statement.get()
        events.push({ seq, type, time, data: JSON.parse(data) })
      }
    } finally {
      statement.reset()
    }
    return events
  }

  async nextSeq(sessionId: string) {
    if (!this.handle.isReady) await this.handle.ready()
    const staged = this.staged.nextSeq(sessionId)
    if (staged !== undefined) return staged
    return this.handle.guard(() => {
      const statement = this.handle.statement('SELECT max(`seq`) FROM `taskward_event` WHERE `sessionId` = ?')
      try {
        statement.bind([sessionId])
        statement.step()
        const [last] = statement.get()
        return last === null || last === undefined ? 0 : Number(last) + 1
      } finally {
        statement.reset()
      }
    })
  }
}

const stores = new WeakMap<object, EventStore>()

/**
 * The event store for the driver behind `ctx.database` now (a restarted host gets a new driver), or
 * behind `database` (the service, when the caller holds it: no lookup through `ctx`).
 */
export function eventStoreOf(ctx: Context, database?: unknown): EventStore {
  const driver = database === undefined ? storeDriver(ctx) : driverOf(database)
  let store = driver && stores.get(driver)
  if (!store) {
    const sqlite = sqliteHandleOf(driver, ctx)
    store = sqlite ? new SQLiteEventStore(sqlite)
      : typeof driver?.pool?.query === 'function' ? new MySQLEventStore(driver, ctx)
        : new MinatoEventStore(ctx)
    if (driver) stores.set(driver, store)
  }
  return store
}

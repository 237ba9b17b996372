import type { Context } from 'cordis'
import type { SessionEvent } from '@taskward/protocol'
import { TaskwardError } from '@taskward/protocol'
import { storeDriver } from '../store/health'
import type { Fence } from './lease'
import { StagedBatches, type StagedBatch } from './staged'

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
   * store, before it: every insert, read and (SQLite) minato write first writes what is staged, in
   * staging order, so nothing committed can depend on a staged event that is not.
   */
  stage(batch: StagedBatch): void
  /** Write what is staged now (one transaction on SQLite); each batch then carries its outcome. */
  writeStaged(): Promise<void> | undefined
  /** The driver behind it was stopped: look the store up again. */
  readonly closed: boolean
}

const duplicate = (error: any) => {
  const wrapped: any = new Error(String(error?.message ?? error))
  wrapped.code = 'duplicate-entry'
  return wrapped
}

const placeholders = (count: number) => Array(count).fill('?').join(', ')

/**
 * SQLite (sql.js): prepared statements on the driver's own handle. Everything between BEGIN and
 * COMMIT is synchronous, so no other write of this process can come between; the driver's
 * `committed()` then makes the commit as durable as configured (fsync with group commit).
 */
class SQLiteEventStore implements EventStore {
  private statements = new Map<string, any>()
  private tablesReady?: Promise<void>
  private staged = new StagedBatches()

  constructor(private driver: any, private ctx: Context) {
    // A minato write (a projection cache, a session row) must not become durable before the staged
    // events it may derive from: the driver asks for them to be written first.
    driver.beforeWrite = () => this.writeStaged()
  }

  stage(batch: StagedBatch) {
    this.staged.add(batch)
  }

  writeStaged(): Promise<void> | undefined {
    if (!this.staged.size) return
    if (!this.isReady) return this.ready().then(() => this.writeStaged())
    try {
      this.insert('', [])
    } catch {
      // Each batch carries the failure; its step reports it.
    }
  }

  get closed() {
    return this.driver.opened === false
  }

  private isReady = false

  /** minato creates and migrates the tables asynchronously after start: wait for that once. */
  private ready() {
    return this.tablesReady ??= this.ctx.database.prepared().then(() => { this.isReady = true })
  }

  private statement(sql: string) {
    let statement = this.statements.get(sql)
    if (!statement) {
      statement = this.driver.db.prepare(sql)
      this.statements.set(sql, statement)
    }
    return statement
  }

  private guard<T>(run: () => T): T {
    if (this.driver.failure) throw this.driver.failure
    try {
      return run()
    } catch (error: any) {
      throw /UNIQUE|PRIMARY/i.test(String(error?.message)) ? duplicate(error) : this.driver.classify?.(error) ?? error
    }
  }

  /** Staged batches and then `events`, in ONE transaction: one commit, one flush for all of them. */
  insert(sessionId: string, events: StoredEvent[]): Promise<void> | undefined {
    if (!this.isReady) return this.ready().then(() => this.insert(sessionId, events))
    const db = this.driver.db
    const batches: StagedBatch[] = []
    for (const batch of this.staged.take()) {
      if (batch.previous?.failure) StagedBatches.refuse([batch], batch.previous.failure)
      else batches.push(batch)
    }
    let durable: Promise<void> | undefined
    try {
      this.guard(() => {
        const insert = this.statement('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES (?, ?, ?, ?, ?)')
        if (events.length === 1 && !batches.length) {
          const [event] = events
          insert.run([sessionId, event.seq, event.type, event.time, event.text])
          return
        }
        db.exec('BEGIN')
        try {
          for (const batch of batches) {
            for (const event of batch.events) insert.run([batch.sessionId, event.seq, event.type, event.time, event.text])
          }
          for (const event of events) insert.run([sessionId, event.seq, event.type, event.time, event.text])
          db.exec('COMMIT')
        } catch (error) {
          db.exec('ROLLBACK')
          throw error
        }
      })
      durable = this.driver.committed?.()
    } catch (error) {
      StagedBatches.refuse(batches, error)
      throw error
    }
    StagedBatches.settle(batches, durable)
    return durable
  }

  async read(sessionId: string, { from, limit, types }: ReadOptions) {
    if (!this.isReady) await this.ready()
    this.writeStaged()
    return this.guard(() => this.readPage(sessionId, from, limit, types) ?? this.readRows(sessionId, from, limit, types))
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
    const statement = this.statement('SELECT count(*), \'[\' || group_concat(\'{"seq":\' || `seq` || \',"type":\' || json_quote(`type`)'
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
    const statement = this.statement(this.selection(types))
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
    if (!this.isReady) await this.ready()
    this.writeStaged()
    return this.guard(() => {
      const statement = this.statement('SELECT max(`seq`) FROM `taskward_event` WHERE `sessionId` = ?')
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

/** MySQL/MariaDB: plain parameterized statements on the driver's pool; a multi-row INSERT is atomic. */
class MySQLEventStore implements EventStore {
  private tablesReady?: Promise<void>
  readonly closed = false
  private staged = new StagedBatches()
  /** Staged batches are written one after another, in staging order. */
  private writing: Promise<void> = Promise.resolve()

  constructor(private driver: any, private ctx: Context) {}

  stage(batch: StagedBatch) {
    this.staged.add(batch)
  }

  /** Each batch is one fenced multi-row INSERT (atomic, and it carries the batch's lease token). */
  writeStaged(): Promise<void> | undefined {
    if (!this.staged.size) return
    let previous = this.writing
    for (const batch of this.staged.take()) {
      const outcome = previous.then(async () => {
        await batch.previous?.written
        return this.write(batch.sessionId, batch.events, batch.fence)
      })
      StagedBatches.settle([batch], outcome)
      previous = outcome.catch(() => {})
    }
    this.writing = previous
    return previous
  }

  private async query(sql: string, values: any[]): Promise<any> {
    await (this.tablesReady ??= this.ctx.database.prepared())
    return new Promise((resolve, reject) => {
      this.driver.pool.query(sql, values, (error: any, results: any) => error ? reject(error) : resolve(results))
    })
  }

  async insert(sessionId: string, events: StoredEvent[], fence?: Fence) {
    await this.writeStaged()
    return this.write(sessionId, events, fence)
  }

  private async write(sessionId: string, events: StoredEvent[], fence?: Fence) {
    const rows = events.map((event) => [sessionId, event.seq, event.type, event.time, event.text])
    let result: any
    try {
      result = fence ? await this.fencedInsert(sessionId, rows, fence) : await this.query('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES ?', [rows])
    } catch (error: any) {
      throw error?.code === 'ER_DUP_ENTRY' || /Duplicate/i.test(String(error?.message)) ? duplicate(error) : error
    }
    if (fence && !(result?.affectedRows > 0)) {
      throw new TaskwardError('LEASE_LOST',
        `This host no longer holds the lease of session ${sessionId} (another host took it, or it lapsed while this host was paused); nothing was written. Resume the session on the host that holds it.`,
        { sessionId, token: fence.token })
    }
  }

  /**
   * One INSERT ... SELECT that joins the rows with the lease row still holding `fence.token` and not
   * expired by the store's clock: the check and the write are one statement, and InnoDB locks the
   * lease row it read (shared) until the insert commits, so a takeover cannot come between.
   */
  private fencedInsert(sessionId: string, rows: unknown[][], fence: Fence) {
    const values = rows.map((_, i) => i ? 'SELECT ?, ?, ?, ?, ?' : 'SELECT ? AS `sessionId`, ? AS `seq`, ? AS `type`, ? AS `time`, ? AS `data`').join(' UNION ALL ')
    return this.query('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) SELECT `v`.* FROM (' + values + ') AS `v` '
      + 'JOIN `taskward_lease` AS `l` ON `l`.`sessionId` = ? AND `l`.`token` = ? AND `l`.`expiresAt` > ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)',
    [...rows.flat(), sessionId, fence.token])
  }

  async read(sessionId: string, { from, limit, types }: ReadOptions) {
    await this.writeStaged()
    const filter = types ? ' AND `type` IN (?)' : ''
    const values = types ? [sessionId, from, [...types], limit] : [sessionId, from, limit]
    const rows: any[] = await this.query(`SELECT \`seq\`, \`type\`, \`time\`, \`data\` FROM \`taskward_event\` WHERE \`sessionId\` = ? AND \`seq\` >= ?${filter} ORDER BY \`seq\` LIMIT ?`, values)
    return rows.map((row) => ({ seq: Number(row.seq), type: row.type, time: Number(row.time), data: JSON.parse(row.data) }))
  }

  async nextSeq(sessionId: string) {
    await this.writeStaged()
    const [row]: any[] = await this.query('SELECT max(`seq`) AS `last` FROM `taskward_event` WHERE `sessionId` = ?', [sessionId])
    return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1
  }
}

/** Any other minato driver (the memory driver of tiny fixtures): through minato itself. */
class MinatoEventStore implements EventStore {
  readonly closed = false
  private staged = new StagedBatches()
  private writing: Promise<void> = Promise.resolve()
  constructor(private ctx: Context) {}

  stage(batch: StagedBatch) {
    this.staged.add(batch)
  }

  writeStaged(): Promise<void> | undefined {
    if (!this.staged.size) return
    let previous = this.writing
    for (const batch of this.staged.take()) {
      const outcome = previous.then(async () => {
        await batch.previous?.written
        return this.write(batch.sessionId, batch.events)
      })
      StagedBatches.settle([batch], outcome)
      previous = outcome.catch(() => {})
    }
    this.writing = previous
    return previous
  }

  async insert(sessionId: string, events: StoredEvent[]) {
    await this.writeStaged()
    return this.write(sessionId, events)
  }

  private async write(sessionId: string, events: StoredEvent[]) {
    const rows = events.map((event) => ({ sessionId, seq: event.seq, type: event.type, time: event.time, data: JSON.parse(event.text) }))
    if (rows.length === 1) {
      await this.ctx.database.create('taskward_event', rows[0])
      return
    }
    await this.ctx.database.withTransaction(async (database) => {
      for (const row of rows) await database.create('taskward_event', row)
    })
  }

  async read(sessionId: string, { from, limit, types }: ReadOptions) {
    await this.writeStaged()
    const query: any = { sessionId, seq: { $gte: from } }
    if (types) query.type = { $in: [...types] }
    const rows = await this.ctx.database.select('taskward_event').where(query).orderBy('seq', 'asc').limit(limit).execute()
    return rows.map((row) => ({ seq: Number(row.seq), type: row.type, time: row.time, data: row.data }))
  }

  async nextSeq(sessionId: string) {
    await this.writeStaged()
    const [last] = await this.ctx.database.select('taskward_event').where({ sessionId }).orderBy('seq', 'desc').limit(1).project(['seq']).execute()
    return last ? Number(last.seq) + 1 : 0
  }
}

const stores = new WeakMap<object, EventStore>()

/** The event store for the driver behind `ctx.database` now (a restarted host gets a new driver). */
export function eventStoreOf(ctx: Context): EventStore {
  const driver = storeDriver(ctx)
  let store = driver && stores.get(driver)
  if (!store) {
    store = typeof driver?.db?.prepare === 'function' ? new SQLiteEventStore(driver, ctx)
      : typeof driver?.pool?.query === 'function' ? new MySQLEventStore(driver, ctx)
        : new MinatoEventStore(ctx)
    if (driver) stores.set(driver, store)
  }
  return store
}

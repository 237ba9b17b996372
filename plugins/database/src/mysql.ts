// Named, not default: the default import breaks in the CommonJS build (esbuild interop); the named export is the same class.
import { MySQLDriver } from '@minatojs/driver-mysql'
import type { Context } from 'cordis'
import { RuntimeError, type Driver } from 'minato'
import { storeUnavailable, TaskwardError } from '@taskward/protocol'

interface IndexColumn {
  INDEX_NAME: string
  NON_UNIQUE: number | string
  COLUMN_NAME: string
  COLLATION: string | null
}

/** What a server answers DDL that another host's identical DDL got to first. */
const RACED_DDL = new Set(['ER_TABLE_EXISTS_ERROR', 'ER_DUP_FIELDNAME', 'ER_DUP_KEYNAME', 'ER_CANT_DROP_FIELD_OR_KEY'])

/**
 * Tries of one prepare while its statements keep racing another host's. Each raced statement means
 * the other host got one statement further, and one prepare can race it more than once: replacing an
 * index is a DROP and a CREATE, and the other host's CREATE runs while this host reads again. Bounded,
 * so a statement that fails this way for another reason (a read that cannot see what the server
 * holds) still fails the start, with the server's error.
 */
const RACED_DDL_TRIES = 5

async function preparedWhileRacing<T>(prepare: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await prepare()
    } catch (error: any) {
      if (!RACED_DDL.has(error?.code) || attempt >= RACED_DDL_TRIES) throw error
    }
  }
}

const quote = (name: string) => '`' + name.replace(/`/g, '``') + '`'

/**
 * @minatojs/driver-mysql 3.3 (the last release for minato 3) predates minato 3.7's index API:
 * minato calls `getIndexes` while preparing every table, and the 3.3 driver lacks it. These three
 * methods fill the gap with information_schema and plain DDL, so the pinned pair works together.
 */
export class TaskwardMySQLDriver extends (MySQLDriver as any) {
  declare config: { host: string, port: number, database: string }
  declare queue: <T = any>(sql: string, values?: any) => Promise<T>
  declare ctx: Context
  declare logger: { debug(...args: unknown[]): void, warn(...args: unknown[]): void }
  declare session: any
  declare pool: any

  /**
   * Connect, or refuse the start: a server that does not answer, or refuses the login or the database,
   * is `STORE_UNAVAILABLE` naming the server and what to do (never the password). Under the cordis CLI
   * (`npm start`) the host ends with it, code 52, as the SQLite store's refusals do.
   */
  async start() {
    try {
      return await (MySQLDriver.prototype as any).start.call(this)
    } catch (error: any) {
      await Promise.resolve().then(() => (MySQLDriver.prototype as any).stop.call(this)).catch(() => {})
      const { host, port, database } = this.config
      // A statement's failure is already coded (see `query`): what the server said, and its code.
      const said = TaskwardError.is(error, 'STORE_UNAVAILABLE') ? error.details?.said : error?.message ?? error
      const cause = TaskwardError.is(error, 'STORE_UNAVAILABLE') ? error.details?.cause : error?.code
      const refusal = new TaskwardError('STORE_UNAVAILABLE',
        `MySQL/MariaDB at ${host}:${port} (database ${database}) did not let the host start: ${said}. `
        + 'Start the server, or fix host, port, user, password and database in the database row of cordis.yml '
        + '(docs/operations.md, "MySQL / MariaDB"); the host did not start.',
        { host, port, database, ...cause ? { cause } : {} })
      this.ctx.emit(this.ctx, 'database/refused', refusal)
      if (this.ctx.get('loader')) setTimeout(() => process.exit(52), 50)
      throw refusal
    }
  }

  /**
   * Declare or migrate one table, then its indexes. minato reads information_schema, then creates or
   * alters: two hosts starting at once on a fresh store both see no table (or no index) and the second
   * CREATE fails (`ER_TABLE_EXISTS_ERROR`, `ER_DUP_KEYNAME`; an ALTER racing another host's fails with a
   * duplicate column or key, a DROP INDEX with a missing key). The other host did the same work: prepare
   * again, from what the server holds now (a few times: see `RACED_DDL_TRIES`). Unanswered, the index failure crashed the host after it
   * had started (minato's prepare task rejects with nobody awaiting it).
   */
  async prepare(name: string) {
    return await preparedWhileRacing(() => (MySQLDriver.prototype as any).prepare.call(this, name))
  }

  async prepareIndexes(name: string) {
    return await preparedWhileRacing(() => (MySQLDriver.prototype as any).prepareIndexes.call(this, name))
  }

  /**
   * Writes that must reach the server before the pool closes: a host releases its session leases
   * while it stops, and minato stops the driver in the same dispose round.
   */
  readonly lastWrites = new Set<Promise<unknown>>()

  async stop() {
    while (this.lastWrites.size) await Promise.allSettled([...this.lastWrites])
    return (MySQLDriver.prototype as any).stop.call(this)
  }

  /** How refusals name this store. */
  get storeName() {
    return `MySQL/MariaDB at ${this.config.host}:${this.config.port}`
  }

  /**
   * Every minato statement: a failure that means the server cannot serve now (a dropped or killed
   * connection, a refused login, a lock wait timeout) is `STORE_UNAVAILABLE` (503), not an internal
   * error. The pool makes a new connection for the next statement, so requests succeed again once
   * the server does.
   */
  query(sql: string, debug = true) {
    return new Promise((resolve, reject) => {
      if (debug) this.logger.debug('> %s', sql)
      ;(this.session ?? this.pool).query(sql, (error: any, results: any) => {
        if (!error) return resolve(results)
        const unavailable = storeUnavailable(error, this.storeName)
        // The base driver logs every failed statement; a store that is down would fill the log with
        // them (the request's refusal says it once, coded).
        if (unavailable !== error) return reject(unavailable)
        this.logger.warn('> %s', sql)
        reject(error?.code === 'ER_DUP_ENTRY' ? new RuntimeError('duplicate-entry', error.message) : error)
      })
    })
  }

  /** The server answers a trivial query (for `/health`). */
  async health() {
    try {
      await this.queue('SELECT 1')
      return { ok: true }
    } catch (error: any) {
      return { ok: false, code: 'STORE_UNAVAILABLE', message: `MySQL/MariaDB does not answer: ${error?.message ?? error}` }
    }
  }

  async getIndexes(table: string): Promise<Driver.Index[]> {
    const columns = await this.queue<IndexColumn[]>(
      'SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, COLLATION FROM information_schema.statistics '
      + 'WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME <> \'PRIMARY\' ORDER BY INDEX_NAME, SEQ_IN_INDEX',
      [this.config.database, table])
    const byName = new Map<string, Driver.Index>()
    for (const column of columns) {
      const index = byName.get(column.INDEX_NAME) ?? { name: column.INDEX_NAME, unique: Number(column.NON_UNIQUE) === 0, keys: {} }
      ;(index.keys as Record<string, 'asc' | 'desc'>)[column.COLUMN_NAME] = column.COLLATION === 'D' ? 'desc' : 'asc'
      byName.set(column.INDEX_NAME, index)
    }
    return [...byName.values()]
  }

  async createIndex(table: string, index: Driver.Index) {
    const keys = Object.entries(index.keys as Record<string, 'asc' | 'desc' | undefined>)
    const name = index.name ?? keys.map(([key, direction]) => `${key}_${direction ?? 'asc'}`).join('+')
    const fields = keys.map(([key, direction]) => `${quote(key)} ${direction ?? 'asc'}`).join(', ')
    await this.queue(`CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX ${quote(name)} ON ${quote(table)} (${fields})`)
  }

  async dropIndex(table: string, name: string) {
    await this.queue(`DROP INDEX ${quote(name)} ON ${quote(table)}`)
  }
}

import type { Context } from 'cordis'
import { duplicate } from './duplicate'

/**
 * The host's own statements on the SQLite driver's handle (sql.js), below minato: prepared once per
 * driver, refused once the store failed, engine errors classified as the driver classifies its own.
 * The event log and the projection caches write through it; minato still declares the tables.
 */
export class SQLiteHandle {
  private statements = new Map<string, any>()
  private tablesReady?: Promise<void>
  /** The tables are prepared (minato creates and migrates them asynchronously after start). */
  isReady = false

  constructor(readonly driver: any, private ctx: Context) {}

  /** Wait once for the tables; a failed preparation (the store was down) is asked again by the next call. */
  ready() {
    return this.tablesReady ??= this.ctx.database.prepared().then(() => { this.isReady = true }, (error) => {
      this.tablesReady = undefined
      throw error
    })
  }

  statement(sql: string) {
    let statement = this.statements.get(sql)
    if (!statement) {
      statement = this.driver.db.prepare(sql)
      this.statements.set(sql, statement)
    }
    return statement
  }

  /** Run synchronous statements: refused once the store failed; a duplicate key is `duplicate-entry`. */
  guard<T>(run: () => T): T {
    if (this.driver.failure) throw this.driver.failure
    try {
      return run()
    } catch (error: any) {
      throw /UNIQUE|PRIMARY/i.test(String(error?.message)) ? duplicate(error) : this.driver.classify?.(error) ?? error
    }
  }

  /** `write` between BEGIN and COMMIT (ROLLBACK when it throws): one commit, one flush for all of it. */
  transaction(write: () => void) {
    const db = this.driver.db
    db.exec('BEGIN')
    try {
      write()
      db.exec('COMMIT')
    } catch (error) {
      db.exec('ROLLBACK')
      throw error
    }
  }

  get closed() {
    return this.driver.opened === false
  }
}

const handles = new WeakMap<object, SQLiteHandle>()

/** The handle of a SQLite driver (one per driver: a restarted host gets a new driver), else undefined. */
export function sqliteHandleOf(driver: any, ctx: Context): SQLiteHandle | undefined {
  if (typeof driver?.db?.prepare !== 'function') return
  let handle = handles.get(driver)
  if (!handle) handles.set(driver, handle = new SQLiteHandle(driver, ctx))
  return handle
}

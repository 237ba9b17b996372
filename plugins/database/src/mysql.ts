// Named, not default: the default import breaks in the CommonJS build (esbuild interop); the named export is the same class.
import { MySQLDriver } from '@minatojs/driver-mysql'
import type { Driver } from 'minato'

interface IndexColumn {
  INDEX_NAME: string
  NON_UNIQUE: number | string
  COLUMN_NAME: string
  COLLATION: string | null
}

const quote = (name: string) => '`' + name.replace(/`/g, '``') + '`'

/**
 * @minatojs/driver-mysql 3.3 (the last release for minato 3) predates minato 3.7's index API:
 * minato calls `getIndexes` while preparing every table, and the 3.3 driver lacks it. These three
 * methods fill the gap with information_schema and plain DDL, so the pinned pair works together.
 */
export class TaskwardMySQLDriver extends (MySQLDriver as any) {
  declare config: { database: string }
  declare queue: <T = any>(sql: string, values?: any) => Promise<T>

  /**
   * Writes that must reach the server before the pool closes: a host releases its session leases
   * while it stops, and minato stops the driver in the same dispose round.
   */
  readonly lastWrites = new Set<Promise<unknown>>()

  async stop() {
    while (this.lastWrites.size) await Promise.allSettled([...this.lastWrites])
    return (MySQLDriver.prototype as any).stop.call(this)
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

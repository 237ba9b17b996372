import type { Context } from 'cordis'
import type { SessionEvent } from '@taskward/protocol'
import { storeUnavailable, TaskwardError } from '@taskward/protocol'
import type { EventStore, ReadOptions, StoredEvent } from './event-store'
import { duplicate } from './duplicate'
import type { Fence } from './lease'
import { SerialStagedBatches, type StagedBatch } from './staged'

/** MySQL/MariaDB: plain parameterized statements on the driver's pool; a multi-row INSERT is atomic. */
export class MySQLEventStore implements EventStore {
  private tablesReady?: Promise<void>
  readonly closed = false
  /** The insert's promise carries the write itself. */
  readonly writtenAtOnce = false
  private staged = new SerialStagedBatches()

  constructor(private driver: any, private ctx: Context) {}

  stage(batch: StagedBatch) {
    this.staged.add(batch)
  }

  /** Each batch is one fenced multi-row INSERT (atomic, and it carries the batch's lease token). */
  writeStaged(): Promise<void> | undefined {
    return this.staged.writeEach((batch) => this.write(batch.sessionId, batch.events, batch.fence))
  }

  settled() {
    this.writeStaged()
    return this.staged.idle
  }

  private async query(sql: string, values: any[]): Promise<any> {
    // Kept once the tables are prepared; a failed preparation (the store was down) is asked again.
    const ready = this.tablesReady ??= this.ctx.database.prepared()
    try {
      await ready
    } catch (error) {
      if (this.tablesReady === ready) this.tablesReady = undefined
      throw error
    }
    return new Promise((resolve, reject) => {
      this.driver.pool.query(sql, values, (error: any, results: any) => error ? reject(storeUnavailable(error, this.driver.storeName ?? 'MySQL/MariaDB')) : resolve(results))
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

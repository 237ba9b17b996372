import type { Context } from 'cordis'
import type { EventStore, ReadOptions, StoredEvent } from './event-store'
import { SerialStagedBatches, type StagedBatch } from './staged'

/** Any other minato driver (the memory driver of tiny fixtures): through minato itself. */
export class MinatoEventStore implements EventStore {
  readonly closed = false
  /** The insert's promise carries the write itself. */
  readonly writtenAtOnce = false
  private staged = new SerialStagedBatches()
  constructor(private ctx: Context) {}

  stage(batch: StagedBatch) {
    this.staged.add(batch)
  }

  writeStaged(): Promise<void> | undefined {
    return this.staged.writeEach((batch) => this.write(batch.sessionId, batch.events))
  }

  settled() {
    this.writeStaged()
    return this.staged.idle
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

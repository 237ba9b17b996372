import type { Context } from 'cordis'
import type { Session } from '@taskward/host'
import { RecordIndex, SessionEvent, emptyRecordIndex, indexRecordEvent } from '@taskward/protocol'

/** The host projection that caches each session's `(namespace, version)` pairs in the database. */
export const RECORD_PAIRS_PROJECTION = 'admission/record-pairs'
/** Bump when `RecordIndex` or its fold changes shape: cached indexes are then rebuilt from seq 0. */
export const RECORD_PAIRS_VERSION = 1

/**
 * Each session's record index: a host projection (cached in the database with a version, built by one
 * fold on first use) mirrored in memory and advanced on every committed event, so that a check on the
 * hot path is a map lookup, never a rescan of the log.
 *
 * A plain object on purpose: the service is reached through Cordis' tracing proxies, where every
 * property access costs microseconds; the per-step path goes straight here.
 */
export class RecordIndexCache {
  private readonly live = new Map<string, RecordIndex>()
  /** The last seq the projection wrote to the database, per session. */
  private readonly persisted = new Map<string, number>()

  constructor(private readonly ctx: Context, private readonly persistEvery: number) {
    ctx.projections.register<RecordIndex>({
      key: RECORD_PAIRS_PROJECTION,
      version: RECORD_PAIRS_VERSION,
      init: emptyRecordIndex,
      apply: indexRecordEvent,
    })
  }

  /**
   * Advance a live index by one committed event. An event past a gap (appended while the index was
   * being built) is left for the next `get`, which sees the index is behind and catches up.
   */
  observe(session: Session, event: SessionEvent) {
    const index = this.live.get(session.id)
    if (index && event.seq === index.lastSeq + 1) this.live.set(session.id, indexRecordEvent(index, event))
  }

  /** The index up to the session's last committed event. */
  get(session: Session): RecordIndex | Promise<RecordIndex> {
    const index = this.live.get(session.id)
    if (!index || index.lastSeq < session.seq - 1) return this.catchUp(session)
    if (index.lastSeq - (this.persisted.get(session.id) ?? -1) > this.persistEvery) return this.catchUp(session)
    return index
  }

  /** Fold the projection up to the session's last event; the projection writes its database cache. */
  private async catchUp(session: Session): Promise<RecordIndex> {
    let index: RecordIndex
    do {
      index = await this.ctx.projections.get<RecordIndex>(session, RECORD_PAIRS_PROJECTION)
      this.persisted.set(session.id, index.lastSeq)
      const current = this.live.get(session.id)
      // An append observed meanwhile may already have moved the live index further.
      if (!current || current.lastSeq < index.lastSeq) this.live.set(session.id, index)
      else index = current
    } while (index.lastSeq < session.seq - 1)
    return index
  }
}

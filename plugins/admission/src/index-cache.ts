import type { Context } from 'cordis'
import { onDispose } from '@taskward/cordis-compat'
import { original, sharedStore, type ProjectionDef, type Projections, type Session } from '@taskward/host'
import { RECORD_EVENT_TYPE, RecordIndex, SessionEvent, emptyRecordIndex, indexRecordEvent } from '@taskward/protocol'

/** The host projection that caches each session's `(namespace, version)` pairs in the database. */
export const RECORD_PAIRS_PROJECTION = 'admission/record-pairs'
/** Bump when `RecordIndex` or its fold changes shape: cached indexes are then rebuilt from seq 0. */
export const RECORD_PAIRS_VERSION = 1

/**
 * Each session's record index: a host projection (cached in the database with a version, built by one
 * fold on first use) mirrored in memory and advanced on every event this process appends (staged ones
 * too: a refused step drops the index, `rolledBack`), so that a check on the hot path is a map lookup,
 * never a rescan of the log. A session whose first event is appended here starts from an empty index
 * instead of a first fold. The database cache follows the log: once the live index runs more than
 * `persistEvery` events ahead of it, it is written again in the background, so a restart folds at most
 * that many events (plus what arrived while the write ran). At most `liveSessions` indexes are kept,
 * the least recently checked dropped first.
 *
 * A plain object on purpose: the service is reached through Cordis' tracing proxies, where every
 * property access costs microseconds; the per-step path goes straight here.
 */
export class RecordIndexCache {
  private readonly live = new Map<string, RecordIndex>()
  /** The last seq the projection wrote to the database, per session. */
  private readonly persisted = new Map<string, number>()
  /** Background cache writes in flight, per session (one at a time). */
  private readonly persisting = new Map<string, Promise<unknown>>()
  /**
   * The reads of the projection in flight, per session: a step refused meanwhile marks them stale (what
   * they read may hold its events), and they read again instead of putting that index back.
   */
  private readonly reading = new Map<string, Set<{ stale: boolean }>>()
  private disposed = false
  /**
   * The projections service, read once: through `ctx` every read is cordis' getter (an Error with its
   * stack, an inject check, a tracing proxy), which cost more than the fold it leads to. A required
   * inject of the admission plugin: the plugin restarts, and this cache with it, when it changes.
   */
  private readonly projections: Projections

  /** Told of each session whose index was dropped for `liveSessions` (its memoized verdict goes too). */
  onDropped?: (sessionId: string) => void

  constructor(private readonly ctx: Context, private readonly persistEvery: number, private readonly liveSessions = 1000) {
    this.projections = original(ctx.projections)
    const projection: ProjectionDef<RecordIndex> & { types: string[] } = {
      key: RECORD_PAIRS_PROJECTION,
      version: RECORD_PAIRS_VERSION,
      init: emptyRecordIndex,
      apply: indexRecordEvent,
      // Only record events change the index. A host whose projections read by type folds just these;
      // others pass every event, which the fold skips past (catchUp copes with either).
      types: [RECORD_EVENT_TYPE],
    }
    ctx.projections.register<RecordIndex>(projection)
    onDispose(ctx, () => { this.disposed = true })
  }

  /**
   * Advance a live index by one committed event. An event past a gap (appended while the index was
   * being built) is left for the next `get`, which sees the index is behind and catches up.
   */
  observe(session: Session, event: SessionEvent) {
    let index = this.live.get(session.id)
    if (!index && event.seq === 0 && !sharedStore(this.ctx)) {
      // A session's first event, appended here: its index starts empty (nothing to read back), so that
      // its first step is answered from memory too — without a projection read per new session (at 500
      // paced sessions that read was ~2 % of the host's thread). Not on a store other hosts write to:
      // this process would not see their appends (its first check reads the log as written instead).
      // The host's projection memory does not hold it (its trimming, `observeForgotten`, does not bound
      // it): `liveSessions` does.
      index = emptyRecordIndex()
      this.makeRoom()
    }
    if (!index || event.seq !== index.lastSeq + 1) return
    const next = indexRecordEvent(index, event)
    this.live.set(session.id, next)
    if (next.lastSeq - (this.persisted.get(session.id) ?? -1) > this.persistEvery) this.persist(session)
  }

  /** The index up to the session's last committed event: synchronous when the live index is current. */
  get(session: Session): RecordIndex | Promise<RecordIndex> {
    const index = this.live.get(session.id)
    if (!index || index.lastSeq < session.seq - 1) return this.catchUp(session)
    // The most recently checked last: `makeRoom` drops the least recently checked first.
    this.live.delete(session.id)
    this.live.set(session.id, index)
    return index
  }

  /**
   * A step of the session was refused: its staged events, which the index followed, are not in the log.
   * The index goes, and a read of it in flight reads again (see `reading`).
   */
  rolledBack(sessionId: string) {
    this.forget(sessionId)
    for (const read of this.reading.get(sessionId) ?? []) read.stale = true
  }

  /** Below `liveSessions` before one more session's index is kept: the least recently checked go first. */
  private makeRoom() {
    while (this.live.size >= this.liveSessions) {
      const oldest: string = this.live.keys().next().value!
      this.forget(oldest)
      this.onDropped?.(oldest)
    }
  }

  /** Drop a session's live index (the host forgot its projection caches); the next `get` reads it back. */
  forget(sessionId: string) {
    this.live.delete(sessionId)
    this.persisted.delete(sessionId)
  }

  /** Write the database cache up to the log's end, in the background; a failure waits for the next try. */
  private persist(session: Session) {
    if (this.disposed || this.persisting.has(session.id)) return
    const work = this.catchUp(session)
      .catch((error) => {
        if (!this.disposed) this.ctx.logger('admission').warn('could not write the record index of %s: %s', session.id, error)
      })
      .finally(() => this.persisting.delete(session.id))
    this.persisting.set(session.id, work)
  }

  /** Fold the projection up to the session's last event; the projection writes its database cache. */
  private async catchUp(session: Session): Promise<RecordIndex> {
    let index: RecordIndex
    const read = { stale: false }
    let reads = this.reading.get(session.id)
    if (!reads) this.reading.set(session.id, reads = new Set())
    reads.add(read)
    try {
      do {
        read.stale = false
        const end = session.seq - 1
        // The cache is written behind: a check must not wait for a durable write.
        index = await this.projections.get<RecordIndex>(session, RECORD_PAIRS_PROJECTION, { background: true })
        // A step refused while it was read: it may hold the refused events. Read again.
        if (read.stale) continue
        // The projection has folded the log up to `end` at least (a projection that reads only some
        // event types may leave `lastSeq` at the last event it read) — but never past where the log
        // stands now (a refusal meanwhile moved it back).
        const through = Math.min(end, session.seq - 1)
        if (index.lastSeq < through) index = { ...index, lastSeq: through }
        this.persisted.set(session.id, index.lastSeq)
        const current = this.live.get(session.id)
        // An append observed meanwhile may already have moved the live index further.
        if (!current) this.makeRoom()
        if (!current || current.lastSeq < index.lastSeq) this.live.set(session.id, index)
        else index = current
      } while (read.stale || index.lastSeq < session.seq - 1)
    } finally {
      reads.delete(read)
      if (!reads.size) this.reading.delete(session.id)
    }
    return index
  }
}

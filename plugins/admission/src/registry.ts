import type { Context } from 'cordis'
import type { Session } from '@taskward/host'
import {
  RecordIndex, RecordPair, RecordReader, TaskwardError, missingReaders, readerUnavailable, recordPairs,
} from '@taskward/protocol'
import type { RecordIndexCache } from './index-cache'

/** A session's admission answer, valid while its pairs, its malformed seq and the readers are unchanged. */
interface Verdict {
  /** The index's pair map: copy-on-write, so a new object means a new pair (see `indexRecordEvent`). */
  pairs: RecordIndex['pairs']
  malformedSeq: number | undefined
  /** `ReaderRegistry.generation` when decided. */
  generation: number
  missing: RecordPair[]
  refusal: TaskwardError | undefined
}

/**
 * The readers registered now, and the admission decision for a session. The decision changes only when
 * a new (namespace, version) appears in the session or a reader comes or goes, so it is kept per
 * session and reused until then: a step pays a map lookup and two identity comparisons.
 * Plain object; see RecordIndexCache.
 */
export class ReaderRegistry {
  readonly readers: RecordReader[] = []
  private readonly verdicts = new Map<string, Verdict>()
  /** Bumped whenever a reader is registered or withdrawn; invalidates every verdict. */
  private generation = 0

  constructor(private readonly indexes: RecordIndexCache) {}

  /** Add a reader for the life of `ctx` (the registering plugin). */
  add(ctx: Context, reader: RecordReader) {
    const readers = this.readers
    return ctx.effect(() => {
      readers.push(reader)
      this.readersChanged()
      return () => {
        const at = readers.indexOf(reader)
        if (at >= 0) readers.splice(at, 1)
        this.readersChanged()
      }
    })
  }

  /** The pairs in the session's records that no registered reader reads, by namespace and version. */
  async check(session: Session): Promise<RecordPair[]> {
    return [...this.verdict(session, await this.indexes.get(session)).missing]
  }

  /**
   * The refusal for the session, or undefined when every record has a reader: `READER_UNAVAILABLE`
   * naming each missing pair, or `RECORD_UNSUPPORTED` for a record event that is no envelope at all.
   */
  async refusal(session: Session): Promise<TaskwardError | undefined> {
    return this.refusalNow(session)
  }

  /** `refusal`, synchronously when the session's index is current in memory (the step guard's path). */
  refusalNow(session: Session): TaskwardError | undefined | Promise<TaskwardError | undefined> {
    const index = this.indexes.get(session)
    if (index instanceof Promise) return index.then((current) => this.verdict(session, current).refusal)
    return this.verdict(session, index).refusal
  }

  /** Drop a session's kept verdict (its index was forgotten); the next check decides again. */
  forget(sessionId: string) {
    this.verdicts.delete(sessionId)
  }

  private readersChanged() {
    this.generation++
    this.verdicts.clear()
  }

  private verdict(session: Session, index: RecordIndex): Verdict {
    const known = this.verdicts.get(session.id)
    if (known && known.pairs === index.pairs && known.malformedSeq === index.malformedSeq && known.generation === this.generation) {
      return known
    }
    const missing = missingReaders(recordPairs(index), this.readers)
    const verdict: Verdict = {
      pairs: index.pairs,
      malformedSeq: index.malformedSeq,
      generation: this.generation,
      missing,
      refusal: refusalFor(session, index, missing),
    }
    this.verdicts.set(session.id, verdict)
    return verdict
  }
}

function refusalFor(session: Session, index: RecordIndex, missing: RecordPair[]): TaskwardError | undefined {
  if (missing.length) return readerUnavailable(session.id, missing)
  if (index.malformedSeq !== undefined) {
    return new TaskwardError('RECORD_UNSUPPORTED',
      `Session ${session.id}: the extension/record event at seq ${index.malformedSeq} is not a record envelope `
      + '(no namespace or schema version), so no reader can read it. Inspect the session log before driving this session.',
      { sessionId: session.id, seq: index.malformedSeq })
  }
}

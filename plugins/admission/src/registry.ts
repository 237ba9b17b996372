import type { Context } from 'cordis'
import type { Session } from '@taskward/host'
import { RecordPair, RecordReader, TaskwardError, missingReaders, readerUnavailable, recordPairs } from '@taskward/protocol'
import type { RecordIndexCache } from './index-cache'

/** The readers registered now, and the admission decision for a session. Plain object; see RecordIndexCache. */
export class ReaderRegistry {
  readonly readers: RecordReader[] = []

  constructor(private readonly indexes: RecordIndexCache) {}

  /** Add a reader for the life of `ctx` (the registering plugin). */
  add(ctx: Context, reader: RecordReader) {
    const readers = this.readers
    return ctx.effect(() => {
      readers.push(reader)
      return () => {
        const at = readers.indexOf(reader)
        if (at >= 0) readers.splice(at, 1)
      }
    })
  }

  /** The pairs in the session's records that no registered reader reads, by namespace and version. */
  async check(session: Session): Promise<RecordPair[]> {
    return missingReaders(recordPairs(await this.indexes.get(session)), this.readers)
  }

  /**
   * The refusal for the session, or undefined when every record has a reader: `READER_UNAVAILABLE`
   * naming each missing pair, or `RECORD_UNSUPPORTED` for a record event that is no envelope at all.
   */
  async refusal(session: Session): Promise<TaskwardError | undefined> {
    const index = await this.indexes.get(session)
    const missing = missingReaders(recordPairs(index), this.readers)
    if (missing.length) return readerUnavailable(session.id, missing)
    if (index.malformedSeq !== undefined) {
      return new TaskwardError('RECORD_UNSUPPORTED',
        `Session ${session.id}: the extension/record event at seq ${index.malformedSeq} is not a record envelope `
        + '(no namespace or schema version), so no reader can read it. Inspect the session log before driving this session.',
        { sessionId: session.id, seq: index.malformedSeq })
    }
  }
}

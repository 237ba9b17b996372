import type { SessionEvent } from '@taskward/protocol'
import type { ReadOptions, StoredEvent } from './event-store'
import type { Fence } from './lease'

/**
 * Events of one session's open step, held by the event store until its next write (or the step's
 * commit) writes them. `written` is set when a write takes the batch (no event joins it after): it
 * resolves once the batch is as durable as configured and rejects with why it was not written
 * (nothing of it was).
 */
export interface StagedBatch {
  readonly sessionId: string
  readonly events: StoredEvent[]
  /** The lease token the session held when the step began (MySQL): the batch's insert carries it. */
  readonly fence?: Fence
  /** The step's batch before this one: this one is written only if that one was (no hole in the log). */
  readonly previous?: StagedBatch
  written?: Promise<void>
  /** Why it was not written, once known. */
  failure?: unknown
  /** Called once, as soon as the batch is known not to be written (the session frees its seqs then). */
  readonly refused?: (error: unknown) => void
  /** Called once with the batch's outcome: true once as durable as configured, false when not written. */
  readonly settled?: (durable: boolean) => void
}

function fail(batch: StagedBatch, error: unknown) {
  if (batch.failure !== undefined) return
  batch.failure = error ?? new Error('not written')
  batch.refused?.(error)
  batch.settled?.(false)
}

/** The staged batches of one store, in staging order. */
export class StagedBatches {
  private batches: StagedBatch[] = []

  get size() {
    return this.batches.length
  }

  add(batch: StagedBatch) {
    this.batches.push(batch)
  }

  /** Every staged batch, removed: the caller writes them now, in this order. */
  take(): StagedBatch[] {
    const taken = this.batches
    this.batches = []
    return taken
  }

  /**
   * `page`, read from the store, completed with the session's staged events from `from` (of `types`),
   * up to `limit`: a session's staged events come after everything the store holds of it.
   */
  merge(sessionId: string, page: SessionEvent[], { from, limit, types }: ReadOptions): SessionEvent[] {
    if (!this.batches.length || page.length >= limit) return page
    for (const batch of this.batches) {
      if (batch.sessionId !== sessionId) continue
      for (const { seq, type, time, text } of batch.events) {
        if (seq < from || (types && !types.includes(type))) continue
        page.push({ seq, type, time, data: JSON.parse(text) })
        if (page.length >= limit) return page
      }
    }
    return page
  }

  /** The seq after the session's last staged event, or undefined when none is staged. */
  nextSeq(sessionId: string): number | undefined {
    for (let i = this.batches.length - 1; i >= 0; i--) {
      const batch = this.batches[i]
      if (batch.sessionId === sessionId && batch.events.length) return batch.events[batch.events.length - 1].seq + 1
    }
  }

  /** Record how the write of `batches` ended (`undefined`: already as durable as configured). */
  static settle(batches: StagedBatch[], outcome: Promise<void> | undefined) {
    if (!batches.length) return
    const written = outcome ?? Promise.resolve()
    // Read by the step's commit; never an unhandled rejection when nobody waits for it (yet).
    written.catch((error) => {
      for (const batch of batches) fail(batch, error)
    })
    for (const batch of batches) batch.written = written
    written.then(() => {
      for (const batch of batches) batch.settled?.(true)
    }, () => {})
  }

  /** Record that `batches` were not written, because of `error`. */
  static refuse(batches: StagedBatch[], error: unknown) {
    // Nothing to refuse: a rejected promise made here would have nobody to handle it (an unhandled
    // rejection on every failed write of a store that is down).
    if (!batches.length) return
    for (const batch of batches) fail(batch, error)
    StagedBatches.settle(batches, Promise.reject(error))
  }
}

/**
 * The staged batches of a store that writes one statement per batch (MySQL, other minato drivers):
 * each is written after every batch staged before it, and only once its step's previous batch was.
 */
export class SerialStagedBatches extends StagedBatches {
  private writing: Promise<void> = Promise.resolve()

  /** Write every staged batch with `write`, in staging order; each batch carries its outcome. */
  writeEach(write: (batch: StagedBatch) => Promise<void>): Promise<void> | undefined {
    if (!this.size) return
    let previous = this.writing
    for (const batch of this.take()) {
      const outcome = previous.then(async () => {
        await batch.previous?.written
        return write(batch)
      })
      StagedBatches.settle([batch], outcome)
      previous = outcome.catch(() => {})
    }
    this.writing = previous
    return previous
  }

  /** Settles once every write begun so far has ended (written or not). */
  get idle(): Promise<void> {
    return this.writing
  }
}

import { TaskwardError } from '@taskward/protocol'
import type { EventStore, StoredEvent } from './event-store'
import type { Fence } from './lease'
import { PendingFlushes } from './pending-flushes'
import type { StagedBatch } from './staged'

/** What a commit's promise waits for: the flush (`durable`) or only the write (`written`); see `Session.appendBatch`. */
export type Acknowledgement = 'durable' | 'written'

/** The session a `StepStaging` works for: its id, its next seq (staging takes seqs), its lease. */
export interface StagingOwner {
  readonly id: string
  seq: number
  readonly fence?: Fence
}

/**
 * What one session has staged and not yet seen durable: the open step's batches (see
 * `Session.openStep`), staged batches whose outcome is not known, and commits whose flush runs on.
 * Every wait for durability of the session (`durable`, `whenDurable`, `flushed`) is answered here.
 */
export class StepStaging {
  /** The open step: its batches in staging order; the last one takes new events. */
  private step?: StagedBatch[]
  /** Staged batches whose outcome nobody has waited for yet. */
  private readonly unsettled = new Set<StagedBatch>()
  /** Each staged batch's outcome (true: durable), until it is known. */
  private readonly outcomes = new Map<StagedBatch, Promise<boolean>>()
  /** Commits made outside a step whose flush has not ended yet. */
  private readonly flushing = new PendingFlushes()

  constructor(private readonly owner: StagingOwner, private readonly store: () => EventStore,
    private readonly rolledBack: (first: number) => void) {}

  get isOpen() {
    return this.step !== undefined
  }

  /** Staged batches are waiting for an outcome (`settle` before committing after them). */
  get hasUnsettled() {
    return this.unsettled.size > 0
  }

  open() {
    this.step ??= []
  }

  /** See `Session.commitStep`. */
  commit(ack: Acknowledgement): Promise<void> {
    const batches = this.step
    this.step = undefined
    if (!batches?.length) return Promise.resolve()
    const store = this.store()
    const atOnce = ack === 'written' && store.writtenAtOnce
    const writing = batches.some((batch) => !batch.written) ? store.writeStaged() : undefined
    // Written (or refused) by now, unless a batch sat in a store that was replaced meanwhile: the
    // outcome is known, the flush runs on (`durable()` waits for it). The step reports a refusal.
    if (atOnce && batches.every((batch) => batch.written)) {
      this.flushOn(batches, { dropRefused: true })
      return this.refusalOf(batches)
    }
    return this.settleStep(batches, writing)
  }

  /**
   * Write what this session staged and wait until every staged batch of it has an outcome (with
   * `written`, on a store that writes at once: until it is written). A refused one (its seqs are free
   * again by then) fails this append too, with nothing written: what was staged before it (a
   * transition the caller made, say) is not in the log, so it must not be acknowledged as if it were.
   */
  async settle(ack: Acknowledgement = 'durable') {
    const batches = [...this.unsettled]
    const store = this.store()
    if (ack === 'written' && store.writtenAtOnce) {
      if (batches.some((batch) => !batch.written)) store.writeStaged()
      if (batches.every((batch) => batch.written)) {
        // A refused batch stays kept: this writer is told, and so is the step (its next `durable()`,
        // before a tool's effect, and its commit) — an effect never follows a refused record.
        this.flushOn(batches, { dropRefused: false })
        return this.refusalOf(batches)
      }
    }
    if (batches.some((batch) => !batch.written)) await store.writeStaged()
    let refused: { batch: StagedBatch, failure: unknown } | undefined
    for (const batch of batches) {
      await batch.written?.catch((failure) => { refused ??= { batch, failure } })
      this.unsettled.delete(batch)
    }
    if (refused) await this.refuse(refused.batch, refused.failure)
  }

  /** Stage events in the open step's batch (a new batch once a write of the store took the last one). */
  stage(entries: { type: string }[], texts: string[]): StoredEvent[] {
    const owner = this.owner
    const step = this.step!
    let batch = step[step.length - 1]
    if (!batch || batch.written) {
      const first = owner.seq
      // Nothing from a refused batch on is written (a later batch waits for the one before it): its
      // seqs are free again at once, before anyone can save state folded past the log's end.
      let resolve!: (durable: boolean) => void
      const outcome = new Promise<boolean>((done) => resolve = done)
      const created: StagedBatch = {
        sessionId: owner.id, events: [], fence: owner.fence, previous: batch,
        refused: () => this.rolledBack(first),
        settled: (durable) => {
          this.outcomes.delete(created)
          resolve(durable)
        },
      }
      batch = created
      this.outcomes.set(batch, outcome)
      step.push(batch)
      this.unsettled.add(batch)
      this.store().stage(batch)
    }
    const time = Date.now()
    const staged = entries.map(({ type }, i) => ({ seq: owner.seq + i, type, time, text: texts[i] }))
    batch.events.push(...staged)
    owner.seq += staged.length
    return staged
  }

  /** See `Session.whenDurable`. */
  whenDurable(): Promise<boolean> | undefined {
    if (!this.outcomes.size && this.flushing.settled) return
    const pending = [...this.outcomes.values(), ...this.flushing.outcomes()]
    return Promise.all(pending).then((outcomes) => outcomes.every(Boolean))
  }

  /** Keep a commit's flush until it ends (see `Session.keepUntilDurable`). */
  keep(durable: Promise<void>) {
    this.flushing.add(durable)
  }

  /** See `Session.flushed`. */
  flushed(): Promise<void> | undefined {
    return this.flushing.all()
  }

  /** See `Session.stagedFrom`. */
  stagedFrom(): number | undefined {
    let first: number | undefined
    for (const batch of this.outcomes.keys()) {
      const seq = batch.events[0]?.seq
      if (seq !== undefined && (first === undefined || seq < first)) first = seq
    }
    return first
  }

  /** See `Session.durable`. */
  async durable() {
    if (this.unsettled.size) await this.settle()
    await this.flushed()
  }

  /**
   * Of batches a store that writes at once has taken: throw why the first refused one was not
   * written (`SEQ_CONFLICT` when another writer took its seqs), or return when all were written.
   */
  private async refusalOf(batches: StagedBatch[]) {
    const refused = batches.find((batch) => batch.failure !== undefined)
    if (refused) await this.refuse(refused, refused.failure)
  }

  /**
   * Throw why `batch` was not written (its seqs are free again by then): `SEQ_CONFLICT` when another
   * writer took them, with the session's next seq caught up; else the store's own error.
   */
  private async refuse(batch: StagedBatch, failure: any): Promise<never> {
    if (failure?.code !== 'duplicate-entry') throw failure
    const owner = this.owner
    owner.seq = await this.store().nextSeq(owner.id)
    throw new TaskwardError('SEQ_CONFLICT',
      `Session ${owner.id}: another writer took seq ${batch.events[0].seq} while this session had it staged; nothing from there on was written. Read the session again and retry.`,
      { sessionId: owner.id, expectSeq: batch.events[0].seq, seq: owner.seq })
  }

  /**
   * `batches` were taken by a write: from here the flush of the written ones is what `durable()` waits
   * for, as a commit's made outside a step (a failed one is remembered). A refused one leaves the
   * keeping only with `dropRefused` (whoever waits for this reports it to the step's owner).
   */
  private flushOn(batches: StagedBatch[], { dropRefused }: { dropRefused: boolean }) {
    const flushes: Promise<void>[] = []
    for (const batch of batches) {
      if (!batch.written) continue
      if (batch.failure !== undefined) {
        if (dropRefused) this.unsettled.delete(batch)
      } else if (this.unsettled.delete(batch)) flushes.push(batch.written)
    }
    if (flushes.length) this.flushing.add(Promise.all(flushes).then(() => {}))
  }

  private async settleStep(batches: StagedBatch[], writing: Promise<void> | undefined) {
    await writing
    try {
      for (const batch of batches) {
        try {
          await batch.written
        } catch (error) {
          await this.refuse(batch, error)
        }
      }
    } finally {
      await Promise.all(batches.map((batch) => batch.written?.catch(() => {})))
      for (const batch of batches) this.unsettled.delete(batch)
    }
  }
}

/**
 * Commits of one session acknowledged once written (`ack: 'written'`, see `Session.appendBatch`) whose
 * flush has not ended yet: what `durable()`, `flushed()` and `whenDurable()` still wait for.
 */
export class PendingFlushes {
  private readonly pending = new Set<Promise<void>>()

  get size() {
    return this.pending.size
  }

  /** Keep `durable` until it settles; never an unhandled rejection (the waiters report it). */
  add(durable: Promise<void>) {
    const flush = durable.finally(() => this.pending.delete(flush))
    flush.catch(() => {})
    this.pending.add(flush)
  }

  /** Resolves once every flush kept now ended; rejects with the first failure. Undefined when none is kept. */
  all(): Promise<void> | undefined {
    if (this.pending.size) return Promise.all(this.pending).then(() => {})
  }

  /** Each flush kept now: true once it ended, false when it failed. */
  outcomes(): Promise<boolean>[] {
    return [...this.pending].map((flush) => flush.then(() => true, () => false))
  }
}

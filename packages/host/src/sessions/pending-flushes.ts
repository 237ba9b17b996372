/**
 * Flushes of one session's commits that did not wait for them (a step's, an `ack: 'written'` commit,
 * a durable commit waited for outside the append order, see `Session.appendBatch`): what `durable()`,
 * `flushed()` and `whenDurable()` still wait for. A flush that failed is remembered: the store failed
 * with it, and whatever it carried may be lost, so every later wait rejects with it.
 */
export class PendingFlushes {
  private readonly pending = new Set<Promise<void>>()
  private failure?: { error: unknown }

  /** Nothing is pending and nothing failed. */
  get settled() {
    return !this.pending.size && !this.failure
  }

  /** Keep `durable` until it settles; never an unhandled rejection (the waiters report it). */
  add(durable: Promise<void>) {
    // Registered first: the failure is known before the flush leaves the set.
    durable.catch((error) => { this.failure ??= { error } })
    const flush = durable.finally(() => this.pending.delete(flush))
    flush.catch(() => {})
    this.pending.add(flush)
  }

  /** Resolves once every flush kept now ended; rejects with a failure. Undefined when settled. */
  all(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure.error)
    if (this.pending.size) return Promise.all(this.pending).then(() => {})
  }

  /** Each flush kept now: true once it ended, false when it failed (one false once any failed). */
  outcomes(): Promise<boolean>[] {
    const outcomes = [...this.pending].map((flush) => flush.then(() => true, () => false))
    return this.failure ? [...outcomes, Promise.resolve(false)] : outcomes
  }
}

import { throwIfAborted } from './fs-errors'

/**
 * How long a stamp may run synchronously before it lets the event loop turn. Filesystem calls are
 * synchronous (a thread-pool round trip per call costs far more than the call on small files), so the
 * stamp works in slices: at most this long, then one `setImmediate`.
 */
export const SLICE_MS = 4

/** Time-slices a synchronous walk and watches the abort signal between units of work. */
export class Pacer {
  private sliceStart = performance.now()

  constructor(private readonly signal?: AbortSignal, private readonly sliceMs = SLICE_MS) {}

  /** Between two units of work (an entry, a chunk): fails with `ABORTED`, and yields when the slice is used up. */
  async step(): Promise<void> {
    throwIfAborted(this.signal)
    if (performance.now() - this.sliceStart < this.sliceMs) return
    await new Promise<void>((resolve) => setImmediate(resolve))
    this.sliceStart = performance.now()
    throwIfAborted(this.signal)
  }
}

import type { Context } from 'cordis'
import { storeDriver } from '@taskward/host'

/**
 * A disk slow to flush: from this call on, every wait for durability of the host's SQLite store parks
 * until the returned release is called (then the flushes run as usual, and later waits no longer park).
 */
export function holdFlushes(ctx: Context): () => void {
  const flusher = (storeDriver(ctx) as any).flusher
  const durable = flusher.durable.bind(flusher)
  let open!: () => void
  const gate = new Promise<void>((resolve) => { open = resolve })
  flusher.durable = () => gate.then(durable)
  return () => {
    flusher.durable = durable
    open()
  }
}

import { quantile } from '@taskward/protocol'
import type { Finding } from './doctor'

/**
 * A flush slower than this at its 99th percentile is worth a warning: it is the whole latency a step
 * may add at the p99 (docs/operations.md, "Sizing a host"), and a turn that starts after a review, an
 * approval or a text answer, like a tool that changes something, waits for one or two flushes of the WAL.
 */
export const SLOW_FLUSH_P99_MS = 50

/** Fewer flushes than this say nothing yet (a host just started); below 100 a p99 would be the max. */
const ENOUGH_FLUSHES = 100

/**
 * The doctor's view of the embedded store's flushes (`/health?verbose` on a running host; a fresh
 * `npm run doctor` process has made none): p50 / p99 / max of the latest flushes of the WAL, each timed
 * as a commit waits for it (the disk, libuv's pool queue, the event loop's delay), a WARN when the p99
 * passes SLOW_FLUSH_P99_MS, naming those causes and what to do. Undefined for a store that does not
 * flush (durability `os`: said by the data directory's finding) or is not SQLite.
 */
export function walFlushFinding(durability: string | undefined, recentMs: number[] | undefined): Finding | undefined {
  if (durability !== 'fsync' || !recentMs) return
  const check = 'WAL flushes'
  if (recentMs.length < ENOUGH_FLUSHES) return { check, verdict: 'ok', detail: `${recentMs.length} flushes of the WAL so far: too few to judge` }
  const p99 = quantile(recentMs, 0.99)
  const figures = `p50 ${quantile(recentMs, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...recentMs).toFixed(1)} ms over the latest ${recentMs.length} flushes, each from its fdatasync's call to its answer`
  if (p99 <= SLOW_FLUSH_P99_MS) return { check, verdict: 'ok', detail: figures }
  return {
    check,
    verdict: 'warn',
    detail: `${figures}: a tool that changes something (its call recorded first) and every acknowledged change (an HTTP answer, `
      + `a command's reply) wait for one or two of these, so this p99 (over the ${SLOW_FLUSH_P99_MS} ms a step may add) is added to them. `
      + 'Look at the disk (put the data directory on one of its own, not the workspaces\'), libuv\'s pool (the file-system threads above) '
      + 'and the host\'s CPU (its event loop answers the flush); or choose durability os and accept losing the last commits to a power loss '
      + '(docs/operations.md, "Sizing a host")',
  }
}

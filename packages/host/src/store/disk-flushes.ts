import type { Finding } from './doctor'

/**
 * A flush slower than this at its 99th percentile is worth a warning: it is the whole latency a step
 * may add at the p99 (docs/operations.md, "Sizing a host"), and a turn that starts after a review, an
 * approval or a text answer waits for one or two flushes of the WAL before its request goes out.
 */
export const SLOW_FLUSH_P99_MS = 50

/** Fewer flushes than this say nothing about the disk yet (a host just started). */
const ENOUGH_FLUSHES = 32

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]

/**
 * The doctor's view of the embedded store's flushes (`/health?verbose` on a running host; a fresh
 * `npm run doctor` process has made none): p50 / p99 / max of the latest fsyncs of the WAL, a WARN
 * when the p99 passes SLOW_FLUSH_P99_MS, with what an operator can do about it. Undefined for a store
 * that does not flush (durability `os`: said by the data directory's finding) or is not SQLite.
 */
export function diskFlushFinding(durability: string | undefined, recentMs: number[] | undefined): Finding | undefined {
  if (durability !== 'fsync' || !recentMs) return
  const check = 'disk flushes'
  if (recentMs.length < ENOUGH_FLUSHES) return { check, verdict: 'ok', detail: `${recentMs.length} flushes of the WAL so far: too few to judge the disk` }
  const sorted = [...recentMs].sort((a, b) => a - b)
  const figures = `p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms over the latest ${sorted.length} fsyncs of the WAL`
  if (quantile(sorted, 0.99) <= SLOW_FLUSH_P99_MS) return { check, verdict: 'ok', detail: figures }
  return {
    check,
    verdict: 'warn',
    detail: `${figures}: an agent's turn that starts after a review, an approval or a text answer waits for one or two of these, `
      + `so the p99 over ${SLOW_FLUSH_P99_MS} ms is added to those turns. Put the data directory on a disk of its own (not the workspaces'), `
      + 'or choose durability os and accept losing the last commits to a power loss (docs/operations.md, "Sizing a host")',
  }
}

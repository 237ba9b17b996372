/**
 * The value at quantile `q` (0..1) of `values`, nearest rank rounded down (the p99 of 100 values is
 * the largest); NaN when there are none. One convention for the doctor's figures and the benchmarks'.
 */
export function quantile(values: readonly number[], q: number): number {
  if (!values.length) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]
}

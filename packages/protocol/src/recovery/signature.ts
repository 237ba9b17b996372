import { createHash } from 'node:crypto'

/** At most this many normalized lines enter a signature (the last ones: summaries come at the end). */
export const SIGNATURE_MAX_LINES = 200

export interface SignatureOptions {
  /**
   * Absolute paths to replace with `<root>` before normalizing, e.g. the temporary copy the check ran
   * in. Its random name would otherwise make every run's signature differ and hide stagnation.
   */
  roots?: string[]
}

/**
 * Normalize one output line so that incidental noise does not count as a changed failure: lower-case,
 * `0x…` literals and long hex runs (hashes, addresses) → `<hex>`, digit runs (timings, counts, line
 * numbers, ports) → `#`, whitespace collapsed.
 */
export function normalizeFailureLine(line: string): string {
  return line
    .toLowerCase()
    .replace(/0x[0-9a-f]+/g, '<hex>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/g, '<hex>')
    .replace(/\d+/g, '#')
    .replace(/\s+/g, ' ')
    .trim()
}

/** The normalized, bounded, de-duplicated and sorted lines a signature is computed from. */
export function failureLines(output: string, options: SignatureOptions = {}): string[] {
  let text = output
  // Longest root first so that a nested root is not half-replaced by its parent.
  for (const root of [...options.roots ?? []].filter(Boolean).sort((a, b) => b.length - a.length)) {
    text = text.split(root).join('<root>')
  }
  const lines = text.split(/\r?\n/).map(normalizeFailureLine).filter((line) => line.length > 0)
  // Sorted: parallel runners print failures in varying order; the set of lines is what matters.
  return [...new Set(lines.slice(-SIGNATURE_MAX_LINES))].sort()
}

/**
 * The failure signature of one failed check: sha256 hex over the check id and its normalized failure
 * lines (see `failureLines`). Two runs with the same signature failed the same way.
 */
export function failureSignature(checkId: string, output: string, options: SignatureOptions = {}): string {
  const hash = createHash('sha256')
  hash.update(`check:${checkId}\n`)
  for (const line of failureLines(output, options)) hash.update(`${line}\n`)
  return hash.digest('hex')
}

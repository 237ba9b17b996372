import { TaskwardError } from '@taskward/protocol'

/** Longest id any store holds (MySQL's `varchar(255)` key; paths and logs stay readable). */
export const MAX_ID_LENGTH = 128

/**
 * Why the store cannot hold `id` (or undefined when it can): empty, over-long, control characters
 * (NUL ends a C string in the engine, others corrupt logs and paths), unpaired surrogates (no UTF-8
 * encoding), `.` and `..` (ids become path segments and URL segments).
 */
export function idProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return 'it is not a string'
  if (!id.length) return 'it is empty'
  if (id.length > MAX_ID_LENGTH) return `it is longer than ${MAX_ID_LENGTH} characters`
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(id)) return 'it holds control characters'
  if (!(id as any).isWellFormed?.() && /[\uD800-\uDFFF]/.test(id)) return 'it holds an unpaired surrogate'
  if (id === '.' || id === '..') return 'it is "." or ".."'
}

/** Refuse an id the store cannot hold with `BAD_REQUEST`, before any query. */
export function checkId(id: unknown, what = 'Session id'): asserts id is string {
  const problem = idProblem(id)
  if (problem) {
    const shown = typeof id === 'string' ? JSON.stringify(id.length > 40 ? id.slice(0, 40) + '…' : id) : typeof id
    throw new TaskwardError('BAD_REQUEST', `${what} ${shown} cannot be stored: ${problem}. Use letters, digits, ".", "_" and "-" (1–${MAX_ID_LENGTH} characters).`)
  }
}

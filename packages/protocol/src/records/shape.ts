/*
 * Non-throwing predicates for the `today` fast paths of record readers (see `KindSpec.today`). Each
 * one accepts a subset of what the schemastery type of the same name accepts — never more — so a
 * payload they accept is one the schema would have read unchanged. They are deliberately strict:
 * `null` where schemastery would tolerate it, for instance, fails here and sends the payload down the
 * schema path, which reads it exactly as before.
 */

/** `Schema.object(...)` / `Schema.dict(...)` accept any non-array object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `Schema.string()`. */
export function isString(value: unknown): value is string {
  return typeof value === 'string'
}

/** `Schema.string().min(1)`. */
export function isNonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0
}

/** `Schema.natural()`: an integer ≥ 0. */
export function isNatural(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0
}

/** `Schema.natural().min(1)`. */
export function isPositive(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1
}

/** `Schema.array(item)` where every item passes `item` (no holes, no `null`s). */
export function isArrayOf<T>(value: unknown, item: (entry: unknown) => entry is T): value is T[]
export function isArrayOf(value: unknown, item: (entry: unknown) => boolean): value is unknown[]
export function isArrayOf(value: unknown, item: (entry: unknown) => boolean): value is unknown[] {
  if (!Array.isArray(value)) return false
  for (let i = 0; i < value.length; i++) if (!item(value[i])) return false
  return true
}

/** `Schema.union([...constants])` of strings, as a membership test. */
export function oneOf<T extends string>(values: readonly T[]): (value: unknown) => value is T {
  const set = new Set<unknown>(values)
  return (value): value is T => set.has(value)
}

/** A field that is optional in the schema: absent (or `undefined`), or passing `check`. */
export function absentOr(value: unknown, check: (value: unknown) => boolean): boolean {
  return value === undefined || check(value)
}

const NAMESPACE_PATTERN = /^[a-z0-9][a-z0-9-]*$/

/**
 * The `RecordEnvelope` schema (envelope.ts), checked without throwing: accepts only what it accepts.
 * Folds try this first and ask `isRecordEnvelope` only when it says no.
 */
export function isEnvelopeShape(value: unknown): boolean {
  return isObject(value) && typeof value.namespace === 'string' && NAMESPACE_PATTERN.test(value.namespace)
    && isPositive(value.schemaVersion) && isNonEmpty(value.kind) && isNonEmpty(value.recordId)
    && value.payload !== undefined && value.payload !== null
}

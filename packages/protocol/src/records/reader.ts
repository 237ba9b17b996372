import Schema from 'schemastery'
import { TaskwardError } from '../errors'
import { RecordEnvelope } from '../envelope'

/**
 * How one kind of record looks across schema versions. `schemas[v]` validates a payload written at
 * version `v`; a version without its own entry uses the nearest lower one (the shape did not change).
 * `upgrades[v]` turns a version-`v` payload into the version-`v+1` shape. Upgrades must never
 * fabricate: a field an old record lacks stays absent.
 */
export interface KindSpec<T = any> {
  schemas: Record<number, Schema<any, any>>
  upgrades?: Record<number, (payload: any) => any>
  /**
   * Today's shape (version `writes`), checked without throwing. A payload it accepts is read without
   * schemastery, whose every failed union member builds an Error with a stack (most of a fold's time);
   * anything it does not accept — older versions, `null`s, invalid data — goes through the schema,
   * which reads it or words the refusal. It must accept only what `schemas[writes]` accepts, leaving
   * the value unchanged (tests hold each `today` to its schema).
   */
  today?: (payload: unknown) => boolean
  /** A fresh copy with known fields only, applied to every payload read (both paths). */
  canonical?: (payload: T) => T
  /**
   * The version new records of this kind are written at, when it must be newer than the lowest one
   * already in today's shape (see `writeVersionOf`): a kind older readers must be refused, although a
   * few records of it were written at an older version before that was decided.
   */
  writesAt?: number
  /** Phantom: today's shape, for typing `read`. */
  readonly __today?: T
}

export interface ReaderSpec {
  namespace: string
  /** The version this code writes (today's shape). */
  writes: number
  /** The lowest version this reader still reads; it reads `minVersion..writes`. */
  minVersion: number
  kinds: Record<string, KindSpec>
}

/** A record read into today's shape, with where it came from. */
export interface ReadRecord<T = any> {
  namespace: string
  /** The version the record was written at (before upgrading). */
  schemaVersion: number
  kind: string
  recordId: string
  seq: number
  payload: T
}

export interface RecordReader {
  readonly namespace: string
  readonly minVersion: number
  readonly maxVersion: number
  readonly kinds: readonly string[]
  reads(version: number): boolean
  /** Validate and upgrade; throws `RECORD_UNSUPPORTED` naming namespace, version, kind and seq. */
  read<T = any>(envelope: RecordEnvelope, seq: number): ReadRecord<T>
}

function unsupported(envelope: Partial<RecordEnvelope>, seq: number, why: string): TaskwardError {
  return new TaskwardError('RECORD_UNSUPPORTED',
    `Record at seq ${seq} (${envelope.namespace ?? '?'} v${envelope.schemaVersion ?? '?'} ${envelope.kind ?? '?'}) `
    + `cannot be read: ${why}. Install a plugin version that reads it, or inspect the session log.`,
    { namespace: envelope.namespace, schemaVersion: envelope.schemaVersion, kind: envelope.kind, seq })
}

/**
 * The payload read by a kind's `today` check, or undefined (then the schema reads it). Without
 * `canonical` the copy is what is checked and returned: a payload read twice (checked, then copied)
 * could answer differently the second time (a getter). A check or a copy that throws is a no.
 */
function todayPayload(kind: KindSpec, payload: unknown): unknown {
  try {
    if (kind.canonical) return kind.today!(payload) ? kind.canonical(payload) : undefined
    const copy = structuredClone(payload)
    return kind.today!(copy) ? copy : undefined
  } catch {
    return undefined
  }
}

let fastPath = true

/**
 * Turn the `today` fast paths of every reader on (the default) or off, returning the previous setting.
 * Off, every payload goes through schemastery as it did before fast paths existed: the reference that
 * equivalence tests compare the fast path with.
 */
export function setRecordFastPath(enabled: boolean): boolean {
  const previous = fastPath
  fastPath = enabled
  return previous
}

function schemaFor(spec: KindSpec, version: number) {
  let best = -Infinity
  for (const key of Object.keys(spec.schemas)) {
    const v = Number(key)
    if (v <= version && v > best) best = v
  }
  return Number.isFinite(best) ? spec.schemas[best] : undefined
}

/**
 * The lowest version whose payloads are already in today's shape (version `writes`): the schema
 * `writes` uses is its schema too, and no upgrade applies from it on. `writes` itself at the latest.
 */
function todayVersionOf(spec: KindSpec, writes: number): number {
  const today = schemaFor(spec, writes)
  let from = writes
  while (from > 1 && schemaFor(spec, from - 1) === today && !spec.upgrades?.[from - 1]) from--
  return today ? from : writes
}

/**
 * The version a new record of `kind` is written at: its `writesAt`, else the lowest one in today's
 * shape (see `todayVersionOf`).
 */
export function writeVersionOf(reader: ReaderSpec, kind: string): number {
  const spec = Object.hasOwn(reader.kinds, kind) ? reader.kinds[kind] : undefined
  if (!spec) throw new TaskwardError('RECORD_UNSUPPORTED', `Reader ${reader.namespace} has no kind "${kind}".`, { namespace: reader.namespace, kind })
  return spec.writesAt ?? todayVersionOf(spec, reader.writes)
}

export function defineReader(spec: ReaderSpec): RecordReader {
  if (!Number.isSafeInteger(spec.minVersion) || !Number.isSafeInteger(spec.writes)
    || spec.minVersion < 1 || spec.writes < spec.minVersion) {
    throw new TaskwardError('CONFIG_INVALID', `Reader ${spec.namespace}: versions ${spec.minVersion}..${spec.writes} are not a valid range.`)
  }
  // The schema of today's version, per kind, looked up once (it is the one almost every record uses).
  const todaySchemas = new Map(Object.values(spec.kinds).map((kind) => [kind, schemaFor(kind, spec.writes)]))
  // Per kind, the lowest version already in today's shape: today's schema and no upgrade from there on.
  // A kind whose shape did not change since it was added is written at that version (older readers
  // keep reading it), so the fast path must hold there too, not only at `writes`.
  const todayFrom = new Map(Object.values(spec.kinds).map((kind) => [kind, todayVersionOf(kind, spec.writes)]))
  const reader: RecordReader = {
    namespace: spec.namespace,
    minVersion: spec.minVersion,
    maxVersion: spec.writes,
    kinds: Object.keys(spec.kinds),
    reads: (version) => Number.isSafeInteger(version) && version >= spec.minVersion && version <= spec.writes,
    read(envelope, seq) {
      if (envelope.namespace !== spec.namespace) {
        throw unsupported(envelope, seq, `this reader reads namespace ${spec.namespace}`)
      }
      if (!reader.reads(envelope.schemaVersion)) {
        throw unsupported(envelope, seq, `schema version ${envelope.schemaVersion} is outside ${spec.minVersion}..${spec.writes}`)
      }
      // Own kinds only: "constructor" or "__proto__" must be an unknown kind, not Object's.
      const kind = Object.hasOwn(spec.kinds, envelope.kind) ? spec.kinds[envelope.kind] : undefined
      if (!kind) throw unsupported(envelope, seq, `unknown kind "${envelope.kind}"`)
      const inTodayShape = envelope.schemaVersion >= todayFrom.get(kind)!
      const schema = inTodayShape ? todaySchemas.get(kind) : schemaFor(kind, envelope.schemaVersion)
      if (!schema) throw unsupported(envelope, seq, `no schema for version ${envelope.schemaVersion}`)
      let payload: any
      if (fastPath && inTodayShape && kind.today && (payload = todayPayload(kind, envelope.payload)) !== undefined) {
        // Today's shape: nothing to validate further or upgrade (the caller owns the copy).
      } else {
        try {
          // Validate a copy so that the caller's frozen event data is never touched.
          payload = schema(structuredClone(envelope.payload))
        } catch (error) {
          throw unsupported(envelope, seq, `invalid payload: ${(error as Error).message}`)
        }
        for (let v = envelope.schemaVersion; v < spec.writes; v++) {
          const upgrade = kind.upgrades?.[v]
          if (upgrade) payload = upgrade(payload)
        }
        if (kind.canonical) {
          try {
            payload = kind.canonical(payload)
          } catch (error) {
            // A payload the schema let through but no reader can give today's shape: refused, never a crash.
            throw unsupported(envelope, seq, `invalid payload: ${(error as Error).message}`)
          }
        }
      }
      return {
        namespace: envelope.namespace,
        schemaVersion: envelope.schemaVersion,
        kind: envelope.kind,
        recordId: envelope.recordId,
        seq,
        payload,
      }
    },
  }
  return reader
}

/** Drop keys whose value is `undefined`, so that absent stays absent after schema resolution. */
export function dropUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key]
  }
  return value
}

/**
 * schemastery fills an absent object with `{}` and an absent array with `[]`. Record schemas must not
 * fabricate, so optional object and array fields are declared through `optional(...)`, which leaves an
 * absent field absent and still validates a present one.
 */
export function optional<S, T>(schema: Schema<S, T>): Schema<S | undefined, T | undefined> {
  return Schema.union([schema, Schema.const(undefined)]) as any
}

import Schema from 'schemastery'
import { TaskwardError } from '../errors'

/**
 * Fail-loud plugin configuration. Cordis resolves a plugin's config with its `Config` schema when the
 * plugin is loaded; a throw there is logged and the plugin's scope fails. `strictConfig` makes that
 * throw say what to fix: every refusal is a `CONFIG_INVALID` naming the plugin, the key path
 * (`budgets.maxAttempts`, `checks[0].argv`) and the value, and a key the schema does not know
 * (a typo such as `maxAtempts`) is refused instead of ignored. See docs/operations.md.
 */
export interface StrictConfigOptions<T> {
  /**
   * Rules across keys that a schema cannot express (unique ids, …), run on the resolved config. Throw
   * `configInvalid(...)`; any other error is wrapped as CONFIG_INVALID of the whole config.
   */
  check?: (config: T) => void
}

/** Values longer than this are cut in messages; secrets are never shown. */
const MAX_VALUE_CHARS = 120

type Path = (string | number)[]

export function formatConfigPath(path: readonly (keyof any)[]): string {
  let text = ''
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`
    else text += (text ? '.' : '') + String(segment)
  }
  return text || '(the whole config)'
}

function formatValue(value: unknown, secret: boolean): string {
  if (secret) return SECRET
  if (value === undefined) return 'undefined'
  let text: string
  try {
    text = JSON.stringify(value) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text
}

/** A `CONFIG_INVALID` for `plugin`'s key `path` holding `value`, saying `why` and what to do. */
export function configInvalid(plugin: string, path: readonly (keyof any)[], value: unknown, why: string, options: { secret?: boolean } = {}) {
  const key = formatConfigPath(path)
  const reason = why.replace(/[.\s]+$/, '')
  return new TaskwardError('CONFIG_INVALID',
    `${plugin} config: ${key} = ${formatValue(value, !!options.secret)} is invalid: ${reason}. `
    + `Fix it in the ${plugin} row of cordis.yml (or remove the key to use its default); the ${plugin} plugin was not started.`,
    { plugin, key, ...options.secret ? {} : { value } })
}

/** The value at `path` inside `data` (undefined where the path leaves the data). */
function valueAt(data: unknown, path: readonly (keyof any)[]): unknown {
  let current: any = data
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined
    current = current[segment as any]
  }
  return current
}

/** The object schemas `schema` may stand for (through intersections, unions, transforms and lazies). */
function objectShapes(schema: Schema | undefined, seen = new Set<Schema>()): Schema[] {
  if (!schema || seen.has(schema)) return []
  seen.add(schema)
  switch (schema.type) {
    case 'object': return [schema]
    case 'intersect':
    case 'union': return (schema.list ?? []).flatMap((inner) => objectShapes(inner, seen))
    case 'transform':
    case 'lazy': return objectShapes(schema.inner, seen)
    default: return []
  }
}

/** The schemas that may describe the elements (`array`) or values (`dict`) of `schema`. */
function elementSchemas(schema: Schema | undefined, kind: 'array' | 'dict', seen = new Set<Schema>()): Schema[] {
  if (!schema || seen.has(schema)) return []
  seen.add(schema)
  if (schema.type === kind) return schema.inner ? [schema.inner] : []
  if (schema.type === 'intersect' || schema.type === 'union') return (schema.list ?? []).flatMap((inner) => elementSchemas(inner, kind, seen))
  if (schema.type === 'transform' || schema.type === 'lazy') return elementSchemas(schema.inner, kind, seen)
  return []
}

/** The first key of `data` (depth first) that no schema alternative declares, with its path. */
function unknownKey(data: unknown, schema: Schema, path: Path): Path | undefined {
  if (Array.isArray(data)) {
    const inners = elementSchemas(schema, 'array')
    for (const [index, item] of data.entries()) {
      for (const inner of inners.slice(0, 1)) {
        const found = unknownKey(item, inner, [...path, index])
        if (found) return found
      }
    }
    return
  }
  if (data === null || typeof data !== 'object') return
  const shapes = objectShapes(schema)
  if (!shapes.length) {
    const [inner] = elementSchemas(schema, 'dict')
    if (!inner) return
    for (const [key, value] of Object.entries(data)) {
      const found = unknownKey(value, inner, [...path, key])
      if (found) return found
    }
    return
  }
  for (const [key, value] of Object.entries(data)) {
    const owner = shapes.find((shape) => shape.dict && Object.hasOwn(shape.dict, key))
    if (!owner) return [...path, key]
    const found = unknownKey(value, owner.dict![key]!, [...path, key])
    if (found) return found
  }
}

/**
 * The first NaN in `data` (depth first), with its path. schemastery's `number().min().max()` lets NaN
 * through (YAML `.nan`: every comparison with NaN is false), and no plugin means anything by it — a
 * NaN limit or weight turns every count it touches into NaN.
 */
function nanPath(data: unknown, path: Path, seen = new Set<object>()): Path | undefined {
  if (typeof data === 'number') return Number.isNaN(data) ? path : undefined
  // Each object once: a recursive YAML alias (`&a {self: *a}`) under `Schema.any()` refers to itself.
  if (data === null || typeof data !== 'object' || seen.has(data)) return
  seen.add(data)
  for (const [key, value] of Object.entries(data)) {
    const found = nanPath(value, [...path, Array.isArray(data) ? Number(key) : key], seen)
    if (found) return found
  }
}

/** `value` with every key whose schema is `.role('secret')` replaced, for messages and details. */
function redact(value: unknown, schemas: Schema[]): unknown {
  if (schemas.some((s) => s.meta?.role === 'secret')) return SECRET
  if (Array.isArray(value)) {
    const inners = schemas.flatMap((s) => elementSchemas(s, 'array'))
    return value.map((item) => redact(item, inners))
  }
  if (value === null || typeof value !== 'object') return value
  const shapes = schemas.flatMap((s) => objectShapes(s))
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key,
    redact(inner, shapes.map((shape) => shape.dict?.[key]).filter((s): s is Schema => !!s))]))
}

const SECRET = '(a secret, not shown)'

/** The schemas that may describe the value at `path`. */
function schemasAt(schema: Schema, path: readonly (keyof any)[]): Schema[] {
  let candidates: Schema[] = [schema]
  for (const segment of path) {
    candidates = typeof segment === 'number'
      ? candidates.flatMap((s) => elementSchemas(s, 'array'))
      : candidates.flatMap((s) => objectShapes(s)).map((shape) => shape.dict?.[segment as string]).filter((s): s is Schema => !!s)
  }
  return candidates
}

/** Whether the schema at `path` (or above it) is marked `.role('secret')`. */
function isSecretPath(schema: Schema, path: readonly (keyof any)[]): boolean {
  let candidates: Schema[] = [schema]
  for (const segment of path) {
    if (candidates.some((s) => s.meta?.role === 'secret')) return true
    candidates = typeof segment === 'number'
      ? candidates.flatMap((s) => elementSchemas(s, 'array'))
      : candidates.flatMap((s) => objectShapes(s)).map((shape) => shape.dict?.[segment as string]).filter((s): s is Schema => !!s)
  }
  return candidates.some((s) => s.meta?.role === 'secret')
}

/** Resolve `raw` with `schema` strictly: unknown keys and invalid values are CONFIG_INVALID. */
export function resolveStrictConfig<S, T>(plugin: string, schema: Schema<S, T>, raw: unknown, options: StrictConfigOptions<T> = {}): T {
  const unknown = unknownKey(raw, schema, [])
  if (unknown) {
    const shapes = unknown.length > 1 ? [] : objectShapes(schema)
    const known = shapes.flatMap((shape) => Object.keys(shape.dict ?? {}))
    throw configInvalid(plugin, unknown, valueAt(raw, unknown),
      `no such key${known.length ? ` (known keys: ${[...new Set(known)].join(', ')})` : ''}`)
  }
  const nan = nanPath(raw, [])
  if (nan) {
    const secret = isSecretPath(schema, nan)
    throw configInvalid(plugin, nan, secret ? undefined : NaN, 'expected a number, got NaN', { secret })
  }
  let resolved: T
  try {
    resolved = schema(raw as S)
  } catch (error) {
    if (!Schema.ValidationError.is(error)) throw error
    const path = (error.options.path ?? []) as Path
    // schemastery's message starts with its own `$.path `; the key is named by configInvalid instead.
    const secret = isSecretPath(schema, path)
    // schemastery starts with its own `$.path` and ends with "but got <value>": the key and the
    // (redacted) value are named by configInvalid instead, so no secret slips through a union's dump.
    const why = error.message.replace(/^\$\S*\s/, '').replace(/ but got .*$/s, '')
    throw configInvalid(plugin, path, secret ? undefined : redact(valueAt(raw, path), schemasAt(schema, path)), why, { secret })
  }
  if (options.check) {
    try {
      options.check(resolved)
    } catch (error) {
      if (TaskwardError.is(error, 'CONFIG_INVALID')) throw error
      throw configInvalid(plugin, [], raw, error instanceof Error ? error.message : String(error))
    }
  }
  return resolved
}

/**
 * A plugin `Config` that refuses instead of guessing: what cordis calls at load, and what the plugin
 * may call again on what it was handed. `undefined` and `null` mean "no config" (all defaults).
 */
export function strictConfig<S, T>(plugin: string, schema: Schema<S, T>, options: StrictConfigOptions<T> = {}): Schema<S, T> {
  // `preserve`: the callback runs once, on the raw value (`any` passes it through untouched).
  return Schema.transform(Schema.any(), (raw: unknown) => resolveStrictConfig(plugin, schema, raw ?? {}, options), true)
    .default({} as any) as unknown as Schema<S, T>
}

/**
 * For a plugin's constructor or `apply`: cordis applies a plugin whose config it refused with `null`
 * when a service it injects appears later (cordis 3.18), which would run it on defaults. Refuse that.
 */
export function loadedConfig<C>(plugin: string, config: C | null | undefined): C | Record<string, never> {
  if (config === null) {
    throw new TaskwardError('CONFIG_INVALID', `${plugin} config was refused when the plugin was loaded (the CONFIG_INVALID logged before this `
      + `names the key and value); the ${plugin} plugin does not start until its row in cordis.yml is fixed.`, { plugin })
  }
  return config ?? {}
}

import type Schema from 'schemastery'

/*
 * Schemastery → JSON Schema, for the `parameters` of the tools a model is offered. Pure: reads the
 * schema's public fields (type, meta, inner, list, dict, value) and never calls a validator. The host
 * still validates every call with the schemastery schema itself; this is only what the model is told.
 */

export type JsonSchema = { [key: string]: unknown }

const describe = (schema: Schema): string | undefined => {
  const text = schema.meta?.description
  if (typeof text === 'string') return text || undefined
  if (text && typeof text === 'object') return Object.values(text).find((v) => typeof v === 'string' && v) as string | undefined
}

/** A default is only useful to the model when it is plain JSON. */
const jsonDefault = (value: unknown): unknown => {
  if (value === undefined || typeof value === 'function') return undefined
  try {
    return JSON.parse(JSON.stringify(value))
  } catch {
    return undefined
  }
}

function annotate(out: JsonSchema, schema: Schema): JsonSchema {
  const description = describe(schema)
  if (description) out.description = description
  const fallback = jsonDefault(schema.meta?.default)
  // Schemastery gives every object, array and dict an implicit empty default: not worth telling.
  const empty = fallback !== null && typeof fallback === 'object' && !Object.keys(fallback).length
  if (fallback !== undefined && !empty) out.default = fallback
  return out
}

function bounds(out: JsonSchema, schema: Schema, low: string, high: string) {
  const { min, max } = schema.meta ?? {}
  if (typeof min === 'number' && Number.isFinite(min)) out[low] = min
  if (typeof max === 'number' && Number.isFinite(max)) out[high] = max
  return out
}

function core(schema: Schema, seen: Set<Schema>): JsonSchema {
  switch (schema.type) {
    case 'any': return {}
    case 'never': return { not: {} }
    case 'const': return schema.value === undefined ? {} : { const: jsonDefault(schema.value) }
    case 'string': {
      const out = bounds({ type: 'string' }, schema, 'minLength', 'maxLength')
      if (schema.meta?.pattern) out.pattern = schema.meta.pattern.source
      return out
    }
    case 'number': {
      // `natural()` is a number with step 1 and min 0: an integer to JSON Schema.
      const step = schema.meta?.step
      const out = bounds({ type: Number.isInteger(step) && step! >= 1 ? 'integer' : 'number' }, schema, 'minimum', 'maximum')
      if (Number.isInteger(step) && step! > 1) out.multipleOf = step
      return out
    }
    case 'natural': {
      const out = bounds({ type: 'integer', minimum: 0 }, schema, 'minimum', 'maximum')
      if ((out.minimum as number) < 0) out.minimum = 0
      return out
    }
    case 'percent': return bounds({ type: 'number', minimum: 0, maximum: 1 }, schema, 'minimum', 'maximum')
    case 'boolean': return { type: 'boolean' }
    case 'date': return { type: 'string', format: 'date-time' }
    case 'regexp': return { type: 'string', description: 'A regular expression.' }
    case 'bitset': return { type: 'array', items: { enum: Object.keys(schema.bits ?? {}) }, uniqueItems: true }
    case 'array': return bounds({ type: 'array', items: convert(schema.inner!, seen) }, schema, 'minItems', 'maxItems')
    case 'dict': {
      const out: JsonSchema = { type: 'object', additionalProperties: convert(schema.inner!, seen) }
      const key = schema.sKey && schema.sKey.type === 'string' ? convert(schema.sKey, seen) : undefined
      if (key && Object.keys(key).length > 1) out.propertyNames = key
      return out
    }
    case 'tuple': {
      const items = (schema.list ?? []).map((inner) => convert(inner, seen))
      return { type: 'array', prefixItems: items, minItems: requiredPrefix(schema.list ?? []), maxItems: items.length, items: false }
    }
    case 'object': {
      const properties: Record<string, JsonSchema> = {}
      const required: string[] = []
      for (const [key, inner] of Object.entries(schema.dict ?? {})) {
        properties[key] = convert(inner, seen)
        if (isRequired(inner)) required.push(key)
      }
      return { type: 'object', properties, ...(required.length ? { required } : {}) }
    }
    case 'union': {
      const list = schema.list ?? []
      // A union of constants is an enum (how schemastery spells one).
      if (list.length && list.every((inner) => inner.type === 'const' && !describe(inner))) {
        return { enum: list.map((inner) => jsonDefault(inner.value)) }
      }
      return { anyOf: list.map((inner) => convert(inner, seen)) }
    }
    case 'intersect': return { allOf: (schema.list ?? []).map((inner) => convert(inner, seen)) }
    case 'transform': return schema.inner ? convert(schema.inner, seen) : {}
    case 'lazy': {
      // A recursive schema is cut where it repeats: the model is told "any" there.
      if (seen.has(schema)) return {}
      const next = new Set(seen).add(schema)
      const inner = (schema as any).builder?.()
      return inner ? convert(inner, next) : {}
    }
    // function, is (class instances) and unknown extensions cannot be written as JSON.
    default: return {}
  }
}

/**
 * A key the model must send: `.required()`, default or not — schemastery refuses a required key that
 * is missing even when it has a default (an array's is `[]`), so the model is told to send it.
 */
function isRequired(schema: Schema): boolean {
  return !!schema.meta?.required
}

function requiredPrefix(list: Schema[]) {
  let count = 0
  for (const inner of list) {
    if (!isRequired(inner)) break
    count++
  }
  return count
}

function convert(schema: Schema, seen: Set<Schema>): JsonSchema {
  return annotate(core(schema, seen), schema)
}

/** The JSON Schema of one schemastery schema. */
export function toJsonSchema(schema: Schema): JsonSchema {
  return convert(schema, new Set())
}

/**
 * The `parameters` of a function tool: always an object schema (the Chat Completions API requires
 * one), `{type: 'object', properties: {}}` for a tool without parameters.
 */
export function toolParameters(schema: Schema | undefined): JsonSchema {
  if (!schema) return { type: 'object', properties: {} }
  const converted = toJsonSchema(schema)
  if (converted.type === 'object') return converted
  // An intersection or union of objects, or `any`: still an object at the top.
  if (converted.type === undefined) return { type: 'object', ...(converted.allOf || converted.anyOf ? {} : { properties: {} }), ...converted }
  // A non-object parameter schema cannot be offered as a function's arguments: the model sends an
  // object, the host's own validation refuses it, and the model sees why.
  return { type: 'object', properties: {}, description: 'This tool takes an object; see its description.' }
}

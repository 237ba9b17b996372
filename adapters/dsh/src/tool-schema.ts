import type Schema from 'schemastery'
import { toolParameters } from '@taskward/plugin-openai/json-schema'

type Json = { [key: string]: unknown }

/** The keywords DSH rc.8's tool schemas accept (packages/core/tools/src/json-schema.ts); others are refused there. */
const KEPT = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'description', 'title', 'default', 'examples'])

/**
 * A tool's schemastery `parameters` as the JSON Schema subset DSH accepts: the same conversion the
 * OpenAI adapter offers a model, then reduced to DSH's keywords (`anyOf` → `oneOf`; bounds, patterns
 * and formats dropped). Only what the model is told: every call is still validated by the schemastery
 * schema itself before the body runs (tools.ts).
 */
export function dshParameters(schema: Schema | undefined): Json {
  return reduce(toolParameters(schema)) as Json
}

function reduce(node: unknown): unknown {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return node
  const source = node as Json
  const branches = (source.anyOf ?? source.oneOf) as unknown[] | undefined
  if (Array.isArray(branches)) {
    const reduced = branches.map(reduce)
    if (reduced.length === 1) return reduced[0]
    return { oneOf: reduced, ...(typeof source.description === 'string' ? { description: source.description } : {}) }
  }
  const out: Json = {}
  for (const [key, value] of Object.entries(source)) {
    if (!KEPT.has(key)) continue
    if (key === 'properties' && value && typeof value === 'object') {
      out.properties = Object.fromEntries(Object.entries(value as Json).map(([name, child]) => [name, reduce(child)]))
    } else if (key === 'items') {
      out.items = reduce(value)
    } else if (key === 'additionalProperties') {
      if (typeof value === 'boolean') out.additionalProperties = value
    } else if (key === 'type' && Array.isArray(value)) {
      return { oneOf: value.map((type) => reduce({ ...source, type })) }
    } else {
      out[key] = value
    }
  }
  if (out.type === undefined && out.enum === undefined && out.const === undefined) {
    // "Any JSON value" has no keyword in DSH's subset; an object is what a model sends for one here.
    out.type = 'object'
  }
  if (Array.isArray(out.required) && out.properties) {
    out.required = (out.required as string[]).filter((key) => Object.hasOwn(out.properties as Json, key))
  }
  return out
}

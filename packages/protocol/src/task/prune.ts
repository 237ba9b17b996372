import type Schema from 'schemastery'

/**
 * Keep only what `schema` declares. schemastery validates declared keys but passes unknown keys
 * through, so a record could smuggle a field its version cannot contain (say `acceptanceCycle` in a
 * v9 record) past the reader; pruning before upgrading keeps such fields absent. Call it on a value
 * that `schema` has already accepted.
 */
export function pruneToSchema(schema: Schema, value: unknown): unknown {
  if (value === undefined || value === null) return value
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object') return value
      const out: Record<string, unknown> = {}
      for (const [key, inner] of Object.entries(schema.dict ?? {})) {
        const field = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined
        if (field !== undefined) out[key] = pruneToSchema(inner, field)
      }
      return out
    }
    case 'array':
      return Array.isArray(value) ? value.map((item) => pruneToSchema(schema.inner!, item)) : value
    case 'dict': {
      if (typeof value !== 'object') return value
      const out: Record<string, unknown> = {}
      for (const [key, item] of Object.entries(value)) {
        // Dict keys are validated identifiers (never "__proto__"); defineProperty keeps that harmless anyway.
        Object.defineProperty(out, key, { value: pruneToSchema(schema.inner!, item), enumerable: true, writable: true, configurable: true })
      }
      return out
    }
    case 'union':
      for (const member of schema.list ?? []) {
        try {
          member(value as never)
        } catch {
          continue
        }
        return pruneToSchema(member, value)
      }
      return value
    default:
      return value
  }
}

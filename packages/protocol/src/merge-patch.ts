/*
 * JSON merge patches (RFC 7386), pure: the task-state notes a model reads are a whole state, then patches
 * on it (plugin-openai writes them, the testkit's mock model reads them back).
 */

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value)

/** The merge patch that turns `from` into `to` (`{}` when they are equal). A value that becomes null cannot be said by one. */
export function mergePatch(from: unknown, to: unknown): unknown {
  if (!isObject(from) || !isObject(to)) return to
  const patch: Record<string, unknown> = {}
  for (const key of Object.keys(to)) {
    if (!(key in from)) patch[key] = to[key]
    else if (JSON.stringify(from[key]) !== JSON.stringify(to[key])) patch[key] = isObject(from[key]) && isObject(to[key]) ? mergePatch(from[key], to[key]) : to[key]
  }
  for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null
  return patch
}

/** `target` with `patch` applied: objects merge key by key, null removes a key, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else out[key] = applyMergePatch(out[key], value)
  }
  return out
}

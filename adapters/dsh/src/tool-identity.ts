import type { DshAgent, DshTools } from './dsh-types'

/*
 * Which tool a DSH call will run — by the definition object DSH resolves, not by its name. The one seam
 * that reads rc.8's registry internals (packages/core/tools/src/index.ts, packages/core/scope).
 *
 * rc.8 resolves a name through scope layers: the agent's own scope (`agent.ctx.tools.register`) shadows
 * its agent preset's standing scope (key `{agentPreset: id}`, where the preset's rows — DSH's `tool-fs`
 * and `tool-fs-search`, with `read`, `glob` and `grep` — register), which shadows the global layer. Any
 * DSH plugin may register a `read` of its own in an agent's scope or globally; only the one the session's
 * preset composition registered is DSH's read-only `read`. Anything else of that name is an
 * implementation tool like any other.
 */

/** DSH's own read-only tools (rc.8's tool-fs `read`, tool-fs-search `glob` and `grep`). */
export const DSH_READ_ONLY_TOOLS: readonly string[] = ['read', 'glob', 'grep']

/** Where the definition DSH runs for a call was registered. */
export type ToolOrigin = 'preset' | 'scope' | 'global' | 'none' | 'unknown'

interface Layer { tools?: { entries(): Iterable<[string, object]> } }
interface Layers { global?: Layer, scoped?: Map<unknown, Layer> }

function entryOf(layer: Layer | undefined, name: string): object | undefined {
  if (!layer?.tools) return
  for (const [key, definition] of layer.tools.entries()) if (key === name) return definition
}

/** The definition object DSH would run for `name` called by `agent` (undefined: none visible). */
export function resolvedDefinition(tools: DshTools, name: string, agent: DshAgent | undefined): object | undefined {
  const get = (tools as { get?: (name: string, scope?: unknown) => object | undefined }).get
  return typeof get === 'function' ? get.call(tools, name, agent) : undefined
}

/**
 * The layer `definition` (resolved for `name`) sits in. `unknown` when this DSH's registry does not look
 * like rc.8's: callers then trust nothing (fail closed).
 */
export function originOf(tools: DshTools, name: string, definition: object | undefined): ToolOrigin {
  if (!definition) return 'none'
  const layers = (tools as unknown as { layers?: Layers }).layers
  if (!layers?.scoped || typeof layers.scoped.entries !== 'function') return 'unknown'
  for (const [key, layer] of layers.scoped) {
    if (entryOf(layer, name) !== definition) continue
    const preset = key && typeof key === 'object' && typeof (key as { agentPreset?: unknown }).agentPreset === 'string'
    return preset ? 'preset' : 'scope'
  }
  return entryOf(layers.global, name) === definition ? 'global' : 'unknown'
}

/** True when the definition DSH runs for this call is DSH's own read-only tool of that name. */
export function isDshReadOnly(tools: DshTools, name: string, definition: object | undefined): boolean {
  return DSH_READ_ONLY_TOOLS.includes(name) && originOf(tools, name, definition) === 'preset'
}

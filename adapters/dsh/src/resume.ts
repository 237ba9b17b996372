import type { DshAgent, DshAgents } from './dsh-types'
import { sessionPreset } from './supervision-preset'

/** DSH's cold-session services (packages/session/session-persistence, packages/…/agent-presets). */
export interface DshResumeServices {
  agents: DshAgents
  /** `sessionPersistence`: the stored header and events of a session that is not open. */
  persistence?: { inspect(id: string): Promise<{ meta: { agentPreset?: string }, events: { type: string, data: any }[] }> }
  /** `agentPresets`: mounts a preset's tools and prompt into an agent's context. */
  presets?: { resolve(id: string): Promise<{ id: string }>, mount(agentCtx: unknown, id: string): Promise<unknown> }
}

/**
 * Bring a stored DSH session back with its agent the way DSH's own API does on first touch (rc.8
 * api-proxy): on the model its log last ran with (its last `request/header`) and with the agent
 * preset its log last selected mounted, so it keeps its tools and persona. A bare `agents.resume`
 * gets neither: its first step fails (`prompt variable "{{model}}" has no value`).
 */
export async function resumeLikeDsh(services: DshResumeServices, sessionId: string): Promise<DshAgent> {
  const live = services.agents.get(sessionId)
  if (live) return live
  const inspected = await services.persistence?.inspect(sessionId)
  const config = [...(inspected?.events ?? [])].reverse().find((event) => event.type === 'request/header')?.data?.header?.config
  const fallback = services.agents.list().find((agent) => agent.options?.model)?.options
  const options = config?.model ? { provider: config.provider, model: config.model } : fallback
  // The last selection wins over the header, as in DSH (the supervision preset is selected later).
  const presetId = inspected && sessionPreset({ header: inspected.meta as any, events: inspected.events as any })
  const presets = services.presets
  const handle = await services.agents.resume({
    resumeSessionId: sessionId,
    ...(options ? { agentOptions: { ...(options.provider ? { provider: options.provider } : {}), model: options.model } } : {}),
    ...(presets && presetId ? { setup: async (agentCtx: unknown) => { await presets.mount(agentCtx, (await presets.resolve(presetId)).id) } } : {}),
  })
  return 'agent' in handle ? handle.agent : handle
}

import type { Context } from 'cordis'
import { original, type ModelAdapter, type ModelRequest } from '@taskward/host'
import { pause, TaskwardError } from '@taskward/protocol'
import { OpenAIRoute, type ContextExceededHandler, type TaskStateSource } from './adapter'
import { registerTokenBudget } from './budget'
import { Config, ContextConfig, type RouteConfig } from './config'

export { Config, ContextConfig, RouteConfig } from './config'
export { OpenAIRoute, type TaskStateSource } from './adapter'
export { buildMessages, layoutMessages, eventsToGroups, cut, shrink, estimateTokens, TASK_STATE_HEADER, type ChatMessage, type ContextLimits, type Layout, type StateNote } from './context'
export { contextRefusal, bodyMessage, type ContextRefusal } from './context-limit'
export { discoverContext, OLLAMA_DEFAULT_NUM_CTX } from './discovery'
export { RouteContext, silentlyCut } from './route-context'
export { TokenCounter, openAIEncoding, countCjk, SAFETY_MARGIN } from './tokens'
export { toJsonSchema, toolParameters, type JsonSchema } from './json-schema'
export { StepAssembler, parseCall, type StreamChunk } from './stream'
export { instructionsFor } from './prompts'
export { redact } from './redact'
export { taskTokens, usageTokens } from './budget'

export const name = 'taskward-openai'
export const inject = {
  models: { required: true },
  tools: { required: true },
  sessions: { required: true },
  supervisor: { required: false },
}

/** The route that picks a configured route by the agent's role (`roles`). */
class RoleRouter implements ModelAdapter {
  constructor(private byRole: (role: string) => ModelAdapter) {}
  step(request: ModelRequest) {
    return this.byRole(request.role).step(request)
  }
}

export function apply(ctx: Context, input: Config) {
  const config = Config(input)
  const logger = ctx.logger('openai')
  const usable: (RouteConfig & { apiKey: string })[] = []
  const seen = new Set<string>()
  for (const route of config.routes) {
    if (seen.has(route.route) || route.route === config.name) {
      throw new TaskwardError('CONFIG_INVALID', `OpenAI route "${route.route}" is named twice (or like the role route "${config.name}"); give each route its own name.`)
    }
    seen.add(route.route)
    const apiKey = route.apiKey || process.env.OPENAI_API_KEY || ''
    if (!apiKey) {
      if (config.requireKey) {
        throw new TaskwardError('CONFIG_INVALID',
          `OpenAI route "${route.route}" has no API key: set its apiKey or the OPENAI_API_KEY environment variable (any non-empty string for endpoints without keys, e.g. Ollama).`,
          { route: route.route })
      }
      logger.info('model route "%s" is off: no API key (set OPENAI_API_KEY to use it)', route.route)
      continue
    }
    usable.push({ ...route, apiKey })
  }
  for (const [role, route] of Object.entries(config.roles)) {
    if (route && !seen.has(route)) {
      throw new TaskwardError('CONFIG_INVALID', `roles.${role} names route "${route}", which is not configured; known: ${[...seen].join(', ') || 'none'}.`)
    }
  }
  if (!usable.length) return

  // Read on every step. `sessions` is a required inject (held). `supervisor` is optional: held by a
  // sub-plugin that requires it (cordis disposes it, synchronously, before the service changes or goes),
  // and looked up through `ctx.get` only while that sub-plugin is not running (`ctx.get` costs a
  // tracing proxy per read; the property getter a stack capture on top).
  const sessions = original(ctx.sessions)
  let heldSupervisor: any
  ctx.inject(['supervisor'], (sub) => {
    sub.effect(() => {
      const held = heldSupervisor = original((sub as any).supervisor)
      return () => {
        if (heldSupervisor === held) heldSupervisor = undefined
      }
    })
  })
  const taskState: TaskStateSource = async (session) => {
    const supervisor = heldSupervisor ?? original(ctx.get('supervisor') as any)
    if (!supervisor) return undefined
    // Reviewers get their task in the review prompt; main and linked sessions see the main task's status.
    if (session.role === 'reviewer') return undefined
    const main = session.role === 'main' ? session : session.parentId ? await sessions.get(session.parentId) : undefined
    if (!main || main.role !== 'main') return undefined
    const status = await supervisor.status(main)
    if (!status?.task) return undefined
    // The continuation controller's counters change on every controller turn while the task does not:
    // shown, they would make a new state note (and a cache miss) each time, and the model does not act on them.
    const { controller: _controller, ...task } = status
    return task
  }

  // A main turn that cannot fit the route's context pauses its task (nothing is lost; /task resume
  // continues it once the context is larger or the input shorter). The task schema has no
  // context reason yet: the pause is `user`, the code is on the turn's agent/error.
  const LIVE = ['planning', 'awaiting-approval', 'active', 'reviewing']
  const onContextExceeded: ContextExceededHandler = async (session, error) => {
    const supervisor = (ctx as any).supervisor
    if (!supervisor || session.role !== 'main') return
    const paused = await supervisor.apply(session, (current: any, at: any) => current && LIVE.includes(current.phase) ? pause(current, { reason: 'model-context' }, at) : current)
    if (paused) logger.warn('task of session %s paused: %s', session.id, error.message)
  }

  const routes = new Map<string, OpenAIRoute>()
  for (const route of usable) {
    const adapter = new OpenAIRoute(ctx, route, config.context, taskState, onContextExceeded, config.transport)
    ctx.on('dispose', () => adapter.close())
    routes.set(route.route, adapter)
    ctx.models.register(route.route, adapter)
  }
  const first = routes.values().next().value!
  const pick = (name?: string) => (name && routes.get(name)) || undefined
  ctx.models.register(config.name, new RoleRouter((role) => {
    const main = pick(config.roles.main) ?? first
    if (role === 'reviewer') return pick(config.roles.reviewer) ?? main
    if (role === 'main') return main
    return pick(config.roles.consultation) ?? main
  }))
  // Tokenizer and context size, before the first step needs them (neither is fatal).
  for (const adapter of routes.values()) adapter.prepare().catch(() => {})
  if (config.maxTokensPerTask) registerTokenBudget(ctx, config.maxTokensPerTask, config.cachedTokenWeight)
  logger.info('model routes: %s (role route "%s")', [...routes.values()].map((r) => `${r.config.route} → ${r.config.model}`).join(', '), config.name)
}

import type { Context } from 'cordis'
import type Schema from 'schemastery'
import { onDispose } from '@taskward/cordis-compat'
import { TaskwardError, asTaskwardError } from '@taskward/protocol'
import type { DshAgent, DshTools } from './dsh-types'
import type { DshSessionsContract } from './sessions'
import type { SessionView } from './session-view'
import { REVIEWER_TOOLS } from '@taskward/plugin-supervisor'
import { dshParameters } from './tool-schema'
import { TASKWARD_RESULT_META } from './shared-events'

/** The supervisor's reviewer tools that are Taskward's own (DSH has read, glob and grep itself). */
const REVIEWER_ONLY = new Set(REVIEWER_TOOLS.filter((name) => name.startsWith('review_')))

export interface ToolDef {
  name: string
  description: string
  parameters?: Schema
  readOnly?: boolean
  execute(args: any, exec: { session: SessionView, agentId?: string, callId: string, signal?: AbortSignal }): unknown
}

export interface ToolCall {
  session: SessionView
  agentId?: string
  name: string
  args: unknown
  tool?: ToolDef
}

type Decision = void | undefined | { allow: true } | { deny: { code: string, message: string, details?: Record<string, unknown> } }
export type ToolGuard = (call: ToolCall) => Decision | Promise<Decision>

/** What a refusal looks like to a DSH agent: rc.8 carries only a reason string, so the code leads it. */
export function refusalText(error: { code: string, message: string }) {
  return `${error.code}: ${error.message}`
}

/**
 * Taskward's `tools` (docs/host.md) inside DSH: our tools are registered as DSH tools (JSON Schema
 * parameters for the model, the schemastery schema still validates each call) and our guards are
 * asked for EVERY DSH tool call — DSH's own file, edit and bash tools and unknown names included —
 * from the adapter's `tools/pre-execute` listener, whose `deny` the agent sees as `Error: <reason>`.
 */
export class DshToolsContract {
  readonly guards = new Set<ToolGuard>()
  readonly defs = new Map<string, ToolDef>()
  /** Disposers of the reviewer-only tools registered into reviewer agents, by tool name. */
  private readonly scoped = new Map<string, (() => void)[]>()
  protected ctx: Context

  constructor(ctx: Context, private readonly dsh: DshTools, private readonly sessions: DshSessionsContract) {
    this.ctx = ctx
  }

  register(def: ToolDef) {
    if (this.defs.has(def.name)) throw new TaskwardError('CONFIG_INVALID', `Tool ${def.name} is already registered.`)
    const defs = this.defs
    defs.set(def.name, def)
    // Reviewer-only tools go to each reviewer agent's own scope (offerReviewerTools): every tool DSH
    // offers costs every request of every agent (measured: benchmarks/dsh.bench.ts).
    const unregister = REVIEWER_ONLY.has(def.name) ? () => {} : this.dsh.register(this.dshTool(def))
    const scoped = this.scoped
    return onDispose(this.ctx, () => {
      defs.delete(def.name)
      unregister()
      for (const dispose of scoped.get(def.name) ?? []) dispose()
      scoped.delete(def.name)
    })
  }

  /** Offer the reviewer-only tools to one reviewer agent (through its own context: DSH scopes them to it). */
  offerReviewerTools(agent: DshAgent) {
    const tools = (agent as any).ctx?.tools as DshTools | undefined
    if (!tools) return
    for (const def of this.defs.values()) {
      if (!REVIEWER_ONLY.has(def.name)) continue
      const list = this.scoped.get(def.name) ?? []
      list.push(tools.register(this.dshTool(def)))
      this.scoped.set(def.name, list)
    }
  }

  /** Our tool as a DSH tool definition. */
  private dshTool(def: ToolDef): Parameters<DshTools['register']>[0] {
    const sessions = this.sessions
    return {
      name: def.name,
      description: def.description,
      parameters: dshParameters(def.parameters),
      output: {
        schema: { type: 'object', additionalProperties: true },
        render: (_args, value) => [{ type: 'text', text: JSON.stringify(value, null, 2) }],
        // Persisted with DSH's tool/result (never shown to the model): the text is this value's JSON,
        // so Taskward's folds read the value back as on our host (shared-events.ts).
        presentationMeta: () => ({ [TASKWARD_RESULT_META]: true }),
      },
      async execute(args, exec) {
        const agent = exec.agent as DshAgent | undefined
        if (!agent) throw new Error(refusalText({ code: 'FORBIDDEN', message: `${def.name} runs only in an agent's session.` }))
        let parsed: unknown
        try {
          parsed = def.parameters ? def.parameters(args ?? {}) : args
        } catch (error) {
          throw new Error(refusalText({ code: 'TOOL_INVALID_ARGS', message: (error as Error).message }))
        }
        try {
          const result = await def.execute(parsed, { session: sessions.view(agent.session), agentId: agent.id, callId: exec.callId, signal: exec.signal })
          // DSH's output schema wants an object: wrap anything else.
          return result && typeof result === 'object' && !Array.isArray(result) ? JSON.parse(JSON.stringify(result)) : { result: result ?? null }
        } catch (error) {
          throw new Error(refusalText(asTaskwardError(error, 'TOOL_FAILED')))
        }
      },
    }
  }

  guard(guard: ToolGuard) {
    const guards = this.guards
    guards.add(guard)
    return onDispose(this.ctx, () => { guards.delete(guard) })
  }

  /** The first denial of the guards for a DSH tool call, or undefined. */
  async denial(agent: DshAgent, name: string, args: unknown): Promise<{ code: string, message: string } | undefined> {
    const call: ToolCall = { session: this.sessions.view(agent.session), agentId: agent.id, name, args, tool: this.defs.get(name) }
    for (const guard of [...this.guards]) {
      try {
        const decision = await guard(call)
        if (decision && 'deny' in decision) return decision.deny
      } catch (error) {
        return asTaskwardError(error)
      }
    }
  }
}

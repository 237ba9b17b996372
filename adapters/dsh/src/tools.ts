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
import { DSH_READ_ONLY_TOOLS, isDshReadOnly, resolvedDefinition } from './tool-identity'
import { restrictReviewerTools } from './reviewer-tools'

/** The supervisor's reviewer tools that are Taskward's own (DSH has read, glob and grep itself). */
const REVIEWER_ONLY = new Set(REVIEWER_TOOLS.filter((name) => name.startsWith('review_')))

/**
 * A consultation's own tools (consultations.ts): offered only to consultation agents, and refused
 * `FORBIDDEN` from any other session before they run. With them it gets `task_status` (the main session's).
 */
const CONSULTATION_ONLY = new Set(['supervisor_propose_repair'])
const CONSULTATION_TOOLS = new Set([...CONSULTATION_ONLY, 'task_status'])

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
  /**
   * The name admission decides on. A tool of an allowlisted name (`read`, `task_status`, …) that is not
   * the tool that name stands for — another DSH plugin's, in the agent's scope or global — is presented
   * as `<name> (another DSH plugin's tool)`, a name no allowlist holds (tool-identity.ts).
   */
  name: string
  args: unknown
  /**
   * The tool that runs: one of Taskward's, or DSH's own read-only `read`/`glob`/`grep` (as the session's
   * agent preset registered them, tool-identity.ts) — guards read `readOnly`; undefined for any other.
   */
  tool?: ToolDef | DshReadOnlyTool
}

/** DSH's own read-only tool, as admission presents it to the guards (it has no Taskward definition). */
export interface DshReadOnlyTool {
  name: string
  readOnly: true
}

type Decision = void | undefined | { allow: true } | { deny: { code: string, message: string, details?: Record<string, unknown> } }
export type ToolGuard = (call: ToolCall) => Decision | Promise<Decision>

/** A DSH tool call as `tools/pre-execute` and `tools/execute` see it (packages/core/tools `ToolExecution`). */
export interface DshToolExecution {
  name: string
  arguments: unknown
  agent?: DshAgent
  /** The enclosing execution's token (a Code Mode sub-dispatch). */
  parent?: symbol
  token?: symbol
}

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
  /** Our tools by the DSH definition objects registered for them: a tool's identity, not its name. */
  private readonly own = new WeakMap<object, ToolDef>()
  /** The definition each admitted call was checked against (tools/execute runs only that one). */
  private readonly vetted = new WeakMap<object, object | undefined>()
  /** The agent of each admitted call, by its execution token (a sub-dispatch names its parent's). */
  private readonly agentsByToken = new WeakMap<symbol, DshAgent>()
  /** Disposers of our tools registered into agents' scopes, by tool name. */
  private readonly scoped = new Map<string, (() => void)[]>()
  protected ctx: Context

  constructor(ctx: Context, private readonly dsh: DshTools, private readonly sessions: DshSessionsContract) {
    this.ctx = ctx
  }

  register(def: ToolDef) {
    if (this.defs.has(def.name)) throw new TaskwardError('CONFIG_INVALID', `Tool ${def.name} is already registered.`)
    const defs = this.defs
    defs.set(def.name, def)
    // No tool is registered globally: every tool DSH offers rides along on every model request of every
    // agent (measured: benchmarks/dsh.bench.ts). Reviewer-only tools go to each reviewer agent's own
    // scope (offerReviewerTools), the others to the main agents of supervised sessions (offerTaskTools).
    const scoped = this.scoped
    return onDispose(this.ctx, () => {
      defs.delete(def.name)
      for (const dispose of scoped.get(def.name) ?? []) dispose()
      scoped.delete(def.name)
    })
  }

  /**
   * Offer the reviewer-only tools to one reviewer agent (through its own context: DSH scopes them to it),
   * and hold what it inherits (its preset's tools) to DSH's read-only read, glob and grep
   * (reviewer-tools.ts). Throws when the agent cannot be restricted.
   */
  offerReviewerTools(agent: DshAgent) {
    this.offer(agent, (name) => REVIEWER_ONLY.has(name))
    restrictReviewerTools(this.dsh, agent)
  }

  /**
   * Offer the main agent's tools (task_*, repair, recovery) to the agent of a session Taskward
   * supervises, once: when the session gets its first Taskward record (`/task new`), or when DSH creates
   * the agent of a session that already has them (a restart). A session Taskward never supervised is
   * offered none: they would only answer that there is no task.
   */
  offerTaskTools(agent: DshAgent) {
    if (this.offered.has(agent)) return
    this.offered.add(agent)
    this.offer(agent, (name) => !REVIEWER_ONLY.has(name) && !CONSULTATION_ONLY.has(name))
  }

  /** Offer a consultation's agent its tools, once (when opened, and when DSH creates its agent after a restart). */
  offerConsultationTools(agent: DshAgent) {
    if (this.offered.has(agent)) return
    this.offered.add(agent)
    this.offer(agent, (name) => CONSULTATION_TOOLS.has(name))
  }

  private readonly offered = new WeakSet<DshAgent>()

  private offer(agent: DshAgent, which: (name: string) => boolean) {
    const tools = (agent as any).ctx?.tools as DshTools | undefined
    if (!tools) return
    for (const def of this.defs.values()) {
      if (!which(def.name)) continue
      let dispose: () => void
      try {
        dispose = tools.register(this.dshTool(def))
      } catch (error) {
        // Another plugin took the name in this agent's scope first: admission knows that tool is not
        // ours (tool-identity.ts) and holds it to the rules of an implementation tool.
        this.ctx.logger('taskward').warn(`${def.name} could not be offered to agent ${agent.id}:`, error)
        continue
      }
      const list = this.scoped.get(def.name) ?? []
      list.push(dispose)
      this.scoped.set(def.name, list)
    }
  }

  /** Our tool as a DSH tool definition (remembered as that tool's identity). */
  private dshTool(def: ToolDef): Parameters<DshTools['register']>[0] {
    const sessions = this.sessions
    const definition: Parameters<DshTools['register']>[0] = {
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
    this.own.set(definition, def)
    return definition
  }

  guard(guard: ToolGuard) {
    const guards = this.guards
    guards.add(guard)
    return onDispose(this.ctx, () => { guards.delete(guard) })
  }

  /**
   * The first denial of the guards for a DSH tool call, or undefined. Asked from `tools/pre-execute` for
   * every call. A call without an agent is attributed to its parent execution's agent (a Code Mode
   * sub-dispatch); with none it names no session whose task admission could decide on, so it is refused.
   */
  async denial(exec: DshToolExecution): Promise<{ code: string, message: string } | undefined> {
    const agent = exec.agent ?? (exec.parent ? this.agentsByToken.get(exec.parent) : undefined)
    if (!agent) {
      return {
        code: 'FORBIDDEN',
        message: `${exec.name} was called without an agent, so Taskward cannot tell which session's task it would touch; `
          + 'while Taskward is loaded such calls are refused. Call the tool from an agent\'s turn.',
      }
    }
    // What DSH will run: it resolves the name in the call's own scope (none for an agent-less sub-dispatch).
    const definition = resolvedDefinition(this.dsh, exec.name, exec.agent)
    const own = definition ? this.own.get(definition) : undefined
    const tool = own ?? (this.isDshReadOnly(exec.name, definition) ? { name: exec.name, readOnly: true as const } : undefined)
    const call: ToolCall = { session: this.sessions.view(agent.session), agentId: agent.id, name: this.admittedName(exec.name, definition, own), args: exec.arguments, tool }
    if (CONSULTATION_ONLY.has(exec.name) && call.session.role !== 'consultation') {
      return {
        code: 'FORBIDDEN',
        message: `${exec.name} is a consultation's tool; this is a ${call.session.role} session `
          + '(the main agent proposes with task_propose_repair; /task consult opens a consultation).',
      }
    }
    for (const guard of [...this.guards]) {
      try {
        const decision = await guard(call)
        if (decision && 'deny' in decision) return decision.deny
      } catch (error) {
        return asTaskwardError(error)
      }
    }
    this.vetted.set(exec, definition)
    if (exec.token) this.agentsByToken.set(exec.token, agent)
  }

  /** Whether admission already answered this call (in `tools/pre-execute`). */
  admitted(exec: DshToolExecution) {
    return this.vetted.has(exec)
  }

  /**
   * Asked from `tools/execute`, synchronously right before DSH resolves the body it runs: a refusal when
   * that is not the definition admission checked (a tool of that name registered or shadowed meanwhile).
   */
  dispatchRefusal(exec: DshToolExecution): { code: string, message: string } | undefined {
    if (!this.vetted.has(exec)) {
      return { code: 'FORBIDDEN', message: `${exec.name} did not pass Taskward's tool admission, so it does not run.` }
    }
    if (resolvedDefinition(this.dsh, exec.name, exec.agent) !== this.vetted.get(exec)) {
      return { code: 'FORBIDDEN', message: `The tool named ${exec.name} changed after Taskward admitted the call; call it again.` }
    }
  }

  /** DSH's own read-only tool of that name, as the session's agent preset registered it (not shadowed, not ours). */
  private isDshReadOnly(name: string, definition: object | undefined): boolean {
    return !!definition && !this.defs.has(name) && DSH_READ_ONLY_TOOLS.includes(name) && isDshReadOnly(this.dsh, name, definition)
  }

  /** The name admission sees: the call's own, unless that name stands for another tool (see `ToolCall.name`). */
  private admittedName(name: string, definition: object | undefined, tool: ToolDef | undefined): string {
    if (tool) return name
    const claimed = this.defs.has(name) || DSH_READ_ONLY_TOOLS.includes(name)
    if (!claimed || !definition) return name
    if (this.isDshReadOnly(name, definition)) return name
    return `${name} (another DSH plugin's tool)`
  }
}

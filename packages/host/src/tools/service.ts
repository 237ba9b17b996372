import { Context, Service } from 'cordis'
import { randomUUID } from 'node:crypto'
import { EventTypes, TaskwardError, asTaskwardError, errorResult } from '@taskward/protocol'
import type { Session } from '../sessions/session'
import type { Awaitable } from 'cosmokit'
import type { GuardDecision, ToolCall, ToolDef, ToolGuard, ToolResult } from './types'
import { original } from '../original'

export interface ExecuteOptions {
  agentId?: string
  signal?: AbortSignal
  /** The model's own id of the call (OpenAI's tool_call_id), recorded next to the host's `callId`. */
  modelCallId?: string
  /** Set when the model's arguments could not be parsed: recorded and refused, nothing runs. */
  invalidArgs?: string
}

declare module 'cordis' {
  interface Context {
    tools: Tools
  }
  interface Events {
    /**
     * DSH's tool admission waterfall, an alias of `tools.guard`: asked after the guards, with the same call;
     * return a `GuardDecision` (`{deny: {code, message}}` refuses, anything else lets the call go on).
     */
    'tools/pre-execute'(call: ToolCall): Awaitable<GuardDecision>
  }
}

/**
 * The tool registry and its admission. Every call is recorded (`tool/call`, then `tool/result`);
 * guards run before the body, in registration order, and the first denial wins: the body never runs
 * and the result records the coded error.
 */
export class Tools extends Service {
  private defs = new Map<string, ToolDef>()
  private guards: ToolGuard[] = []
  /** Cordis' listener table (one object for the life of the app), read once: the context getter is slow. */
  private hooks?: Record<string, unknown[] | undefined>

  constructor(ctx: Context) {
    super(ctx, 'tools', true)
  }

  /** Register a tool; disposing the registering plugin removes it. Returns a disposer. */
  register<A, R>(def: ToolDef<A, R>) {
    if (!/^[a-z][a-z0-9_]*$/.test(def.name)) {
      throw new TaskwardError('CONFIG_INVALID', `Tool name "${def.name}" must be lower_snake_case.`)
    }
    if (this.defs.has(def.name)) {
      throw new TaskwardError('CONFIG_INVALID', `Tool "${def.name}" is already registered.`)
    }
    this.defs.set(def.name, def)
    return this.ctx.effect(() => () => {
      if (this.defs.get(def.name) === def) this.defs.delete(def.name)
    })
  }

  /** Add an admission guard; disposing the registering plugin removes it. Returns a disposer. */
  guard(fn: ToolGuard) {
    this.guards.push(fn)
    return this.ctx.effect(() => () => {
      const index = this.guards.indexOf(fn)
      if (index >= 0) this.guards.splice(index, 1)
    })
  }

  get(name: string) {
    return this.defs.get(name)
  }

  list() {
    return [...this.defs.values()]
  }

  /**
   * Run a tool for a session (or its agent): record the call, ask the guards, validate, execute, and
   * record the result. Never throws for a refusal: the coded error is in the returned result.
   */
  execute(session: Session, name: string, args: unknown, options: ExecuteOptions = {}): Promise<ToolResult> {
    // Called through cordis' tracing view, every `this.x` would derive a context: run on the object itself
    // (nothing here registers anything for the caller).
    return original(this).run(session, name, args, options)
  }

  private async run(session: Session, name: string, args: unknown, options: ExecuteOptions): Promise<ToolResult> {
    const callId = randomUUID()
    const modelCallId = typeof options.modelCallId === 'string' && options.modelCallId ? { modelCallId: options.modelCallId.slice(0, 200) } : {}
    if (options.invalidArgs !== undefined) {
      // Arguments the model sent unparsed: the call is recorded, nothing runs (not even the guards),
      // and the model sees why on its next step.
      const reason = String(options.invalidArgs).slice(0, 500)
      await session.append(EventTypes.toolCall, { callId, name, args: {}, invalidArgs: reason, ...modelCallId })
      const outcome: ToolResult = {
        callId, name, ...modelCallId,
        error: { code: 'TOOL_INVALID_ARGS', message: `Invalid arguments for ${name}: ${reason}. Nothing was run; call it again with a JSON object.` },
      }
      await session.append(EventTypes.toolResult, outcome)
      return outcome
    }
    await session.append(EventTypes.toolCall, { callId, name, args: args ?? {}, ...modelCallId })
    const tool = this.defs.get(name)
    let outcome: ToolResult
    try {
      const call: ToolCall = { session, agentId: options.agentId, name, args, tool }
      for (const guard of [...this.guards]) {
        const decision = await guard(call)
        if (decision && 'deny' in decision) {
          throw new TaskwardError(decision.deny.code as any, decision.deny.message, decision.deny.details)
        }
      }
      // DSH's `tools/pre-execute` waterfall, dispatched only when someone listens (a dispatch costs more than a guard).
      this.hooks ??= (this.ctx.lifecycle as any)._hooks as Record<string, unknown[] | undefined>
      if (this.hooks['tools/pre-execute']?.length) {
        const decision = await this.ctx.serial('tools/pre-execute', call)
        if (decision && typeof decision === 'object' && 'deny' in decision) {
          throw new TaskwardError(decision.deny.code as any, decision.deny.message, decision.deny.details)
        }
      }
      if (!tool) {
        throw new TaskwardError('TOOL_NOT_FOUND', `There is no tool "${name}". Available: ${[...this.defs.keys()].sort().join(', ')}.`)
      }
      let parsed: any = args ?? {}
      if (tool.parameters) {
        try {
          parsed = tool.parameters(parsed)
        } catch (error) {
          throw new TaskwardError('TOOL_INVALID_ARGS', `Invalid arguments for ${name}: ${(error as Error).message}.`)
        }
      }
      // Write-ahead: an effect outside the log (a file, a process) comes after its durable tool/call.
      if (!tool.readOnly && !tool.recordsOnly) await session.durable()
      const result = await tool.execute(parsed, { session, agentId: options.agentId, callId, signal: options.signal })
      outcome = { callId, name, ...modelCallId, result: result ?? null }
    } catch (error) {
      const coded = asTaskwardError(error, 'TOOL_FAILED')
      outcome = { callId, name, ...modelCallId, error: errorResult(coded) }
    }
    await session.append(EventTypes.toolResult, outcome)
    return outcome
  }
}

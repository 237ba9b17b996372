import type { Awaitable } from 'cosmokit'
import type Schema from 'schemastery'
import type { Session } from '../sessions/session'

/** What a tool body gets besides its arguments. */
export interface ToolExecution {
  session: Session
  /** The agent's session id when an agent made the call. */
  agentId?: string
  callId: string
  signal?: AbortSignal
}

export interface ToolDef<A = any, R = any> {
  name: string
  description: string
  /** Validates (and fills defaults of) the arguments; invalid → `TOOL_INVALID_ARGS`. */
  parameters?: Schema<any, A>
  /** True for tools that cannot change anything (used by admission guards and docs). */
  readOnly?: boolean
  /**
   * True for tools whose every effect is an event of the session's log (a supervisor transition, a
   * record): they run with the step's events staged, and commit with them. Any other tool that is not
   * `readOnly` (a file write, a shell) runs only once its `tool/call` and everything staged before it
   * is durable: an effect outside the log never comes before its record.
   */
  recordsOnly?: boolean
  execute(args: A, exec: ToolExecution): Awaitable<R>
}

export interface ToolCall {
  session: Session
  agentId?: string
  name: string
  args: unknown
  /** The registered tool, or undefined for an unknown name (guards still decide first). */
  tool?: ToolDef
}

export interface Denial {
  /** `details` (optional) reach the tool result like a thrown TaskwardError's. */
  deny: { code: string, message: string, details?: Record<string, unknown> }
}

export type GuardDecision = void | undefined | { allow: true } | Denial

export type ToolGuard = (call: ToolCall) => Awaitable<GuardDecision>

/** The data of a `tool/result` event. */
export interface ToolResult<R = any> {
  callId: string
  name: string
  /** The model's id of the call, when the model gave one. */
  modelCallId?: string
  result?: R
  /** A refusal: its code, message and `details` when the error had any. */
  error?: { code: string, message: string, details?: Record<string, unknown> }
}

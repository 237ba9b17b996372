import type { Awaitable } from 'cosmokit'
import type { Session } from '../sessions/session'
import type { ToolResult } from '../tools/types'

/** What a model is asked for one step of a turn. */
export interface ModelRequest {
  session: Session
  /** The agent's role ('main', 'reviewer', 'consultation', ...): the scripted model keys scripts by it. */
  role: string
  /** The message that started this turn. */
  input: { text: string, meta: Record<string, any> }
  /** Results of the tool calls of the previous step of this turn. */
  results: ToolResult[]
  /** Step number within the turn, from 0. */
  step: number
  signal: AbortSignal
  /**
   * Streamed assistant text as it arrives (optional for adapters). The agent emits each delta as the
   * cordis event `agent/text-delta`; the recorded `assistant/message` is still the step's whole `text`.
   */
  onText?: (delta: string) => void
}

export interface ModelToolCall {
  name: string
  args?: Record<string, any>
  /** The adapter's id for the call (OpenAI's `tool_call_id`), echoed in the recorded call and result. */
  id?: string
  /**
   * Set when the model's arguments could not be parsed (not JSON, not an object): the agent records
   * the call and a `TOOL_INVALID_ARGS` result the model sees on its next step, and runs nothing.
   */
  invalidArgs?: string
}

/** Tokens one model step used, as the endpoint reported them. */
export interface ModelUsage {
  promptTokens: number
  completionTokens: number
  /** Of `promptTokens`, those the endpoint served from its prompt cache (when it reports them). */
  cachedTokens?: number
  /** The endpoint reported no usage: the adapter's own estimate (recorded with `estimated: true`). */
  estimated?: boolean
}

/** One model step: optional text, optional tool calls. A step without tool calls ends the turn. */
export interface ModelStep {
  text?: string
  toolCalls?: ModelToolCall[]
  /** Recorded by the agent as a `model/usage` event `{route, step, promptTokens, completionTokens, cachedTokens?}`. */
  usage?: ModelUsage
}

export interface ModelAdapter {
  step(request: ModelRequest): Awaitable<ModelStep>
}

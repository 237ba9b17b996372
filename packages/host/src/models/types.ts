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
}

export interface ModelToolCall {
  name: string
  args?: Record<string, any>
}

/** One model step: optional text, optional tool calls. A step without tool calls ends the turn. */
export interface ModelStep {
  text?: string
  toolCalls?: ModelToolCall[]
}

export interface ModelAdapter {
  step(request: ModelRequest): Awaitable<ModelStep>
}

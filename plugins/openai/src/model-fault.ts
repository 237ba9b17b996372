import { APIConnectionError, APIError } from 'openai'
import { TaskwardError } from '@taskward/protocol'
import { cut } from './context'
import { bodyMessage, contextRefusal } from './context-limit'
import { redact } from './redact'

/** What a route's fault message names (the key only to scrub it). */
export interface FaultRoute {
  route: string
  apiKey: string
  timeoutMs: number
  maxRetries: number
}

/** How the step failed, beside the error: a stall the route's timer saw, the refused body it kept. */
export interface FaultSeen {
  stalled: boolean
  body?: string
  /** The request's calibrated token estimate (named when the endpoint gives no count). */
  estimate: number
}

/**
 * A coded, key-free error for any failure of a step: a stall or an unreachable endpoint, a context
 * refusal (`MODEL_CONTEXT_EXCEEDED` with the limit and request size, as each server names them), any
 * other status with what to do about it (`MODEL_UNAVAILABLE`), a coded error as it is.
 */
export function modelFault(error: unknown, { route, apiKey, timeoutMs, maxRetries }: FaultRoute, { stalled, body, estimate }: FaultSeen): TaskwardError {
  const scrub = (text: string) => redact(text, apiKey)
  if (stalled) {
    return new TaskwardError('MODEL_UNAVAILABLE',
      `Model route "${route}" sent nothing for ${timeoutMs} ms; the step was stopped. Retry the turn, or raise timeoutMs.`,
      { route, reason: 'stalled' })
  }
  if (error instanceof APIConnectionError) {
    return new TaskwardError('MODEL_UNAVAILABLE',
      `Model route "${route}" could not be reached (${scrub(error.message)}) after ${maxRetries} retries; check baseURL and the network, then retry the turn.`,
      { route, reason: 'connection' })
  }
  if (error instanceof APIError) {
    const status = error.status
    const text = body ?? (error.error ? safeString(error.error) : '')
    const refusal = contextRefusal(status, `${text}\n${error.message}\n${error.code ?? ''}`)
    if (refusal) {
      const limit = refusal.limit
      return new TaskwardError('MODEL_CONTEXT_EXCEEDED',
        `Model route "${route}" refused the request as longer than its context (${limit ? `limit ${limit} tokens` : 'no limit named'}, `
        + `request ${refusal.requested ?? `≈${estimate}`} tokens). Nothing is lost: send a shorter message, or use a model with a larger context, then /task resume.`,
        { route, status, reason: 'context', ...(limit ? { limit } : {}), requested: refusal.requested ?? estimate, ...(refusal.completion ? { completion: refusal.completion } : {}) })
    }
    // The SDK's message is empty when the endpoint's body is not `{error: {message}}` (vLLM's flat errors).
    const said = error.error ? error.message : body ? bodyMessage(body) : error.message
    const hint = status === 401 || status === 403 ? 'the endpoint refused the API key; check it'
      : status === 404 ? 'check the model name and baseURL'
        : status === 429 ? 'the endpoint is rate limiting; wait and retry the turn'
          : status && status >= 500 ? 'the endpoint failed; retry the turn later'
            : 'the endpoint refused the request'
    return new TaskwardError('MODEL_UNAVAILABLE',
      `Model route "${route}" answered ${status ?? 'an error'}: ${cut(scrub(said), 500)} — ${hint}.`,
      { route, status, reason: 'status' })
  }
  if (error instanceof TaskwardError) return error
  return new TaskwardError('MODEL_UNAVAILABLE',
    `Model route "${route}" failed: ${scrub(error instanceof Error ? error.message : String(error)).slice(0, 500)}. Retry the turn.`,
    { route, reason: 'stream' })
}

/** A value as text for a message: an error's message, else JSON, else String. */
export function safeString(value: unknown) {
  if (value instanceof Error) return value.message
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}

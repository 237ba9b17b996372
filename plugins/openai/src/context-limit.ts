/*
 * What an endpoint says about its context size (pure): a refusal because the request was too long, in
 * each dialect, and the size it names.
 *
 *   OpenAI    400 {"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens …"}}
 *   DeepSeek  400 {"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70012 tokens (…in the messages, … in the completion) …","type":"invalid_request_error"}}
 *   vLLM      400 {"object":"error","message":"This model's maximum context length is 4552 tokens. However, you requested 6793 tokens …","type":"BadRequestError","code":400}
 *             (flat; newer builds nest it under "error", or say "… is longer than the maximum model length of 4096")
 *   llama.cpp 400 {"error":{"code":400,"type":"exceed_context_size_error","message":"the request exceeds the available context size …","n_prompt_tokens":5012,"n_ctx":4096}}
 */

export interface ContextRefusal {
  /** The context size the endpoint named, in tokens (undefined: it named none). */
  limit?: number
  /** The request size it named, in tokens. */
  requested?: number
  /** Of that, what it reserved for the completion (DeepSeek and vLLM name it: `… N in the completion`). */
  completion?: number
}

const SIGNS = /context_length_exceeded|exceed_context_size|maximum context length|maximum model length|max_model_len|context (?:size|window|length)|too many tokens|prompt is too long/i

const LIMITS = [
  /maximum context length is (\d+)/i,
  /maximum model length (?:of |is )?(\d+)/i,
  /max_model_len[^\d]{0,6}(\d+)/i,
  /"n_ctx"\s*:\s*(\d+)/,
  /\bn_ctx\s*[=:]\s*(\d+)/,
  /context (?:size|window|length) (?:of|is) (\d+)/i,
]

const REQUESTED = [
  /you requested (\d+) tokens/i,
  /resulted in (\d+) tokens/i,
  /request has (\d+) (?:input )?tokens/i,
  /"n_prompt_tokens"\s*:\s*(\d+)/,
  /prompt \(length (\d+)\)/i,
  /prompt \((\d+) tokens?\)/i,
  /(\d+) (?:input )?tokens? (?:in the prompt|in the messages)/i,
]

const first = (text: string, patterns: RegExp[]) => {
  for (const pattern of patterns) {
    const found = pattern.exec(text)
    const value = found ? Number(found[1]) : NaN
    if (Number.isSafeInteger(value) && value > 0) return value
  }
  return undefined
}

/**
 * A context-length refusal in `status` + `body` (the endpoint's answer as text), or undefined. Only a
 * 400, 413 or 422 counts: a 5xx that mentions the context is an endpoint failure, retried as such.
 */
export function contextRefusal(status: number | undefined, body: string): ContextRefusal | undefined {
  if (status !== 400 && status !== 413 && status !== 422) return undefined
  // Bounded: the patterns run over the first few kilobytes only (a body is the endpoint's, any size).
  const text = body.slice(0, 8000)
  if (!SIGNS.test(text)) return undefined
  const completion = first(text, [/(\d+) (?:tokens? )?in the completion/i])
  return { limit: first(text, LIMITS), requested: first(text, REQUESTED), ...(completion ? { completion } : {}) }
}

/** What a refused request's body says, for a person: its `message` (flat or under `error`), else the text. */
export function bodyMessage(body: string): string {
  try {
    const parsed = JSON.parse(body)
    const message = parsed?.error?.message ?? parsed?.message ?? parsed?.detail
    if (typeof message === 'string' && message) return message
  } catch {}
  return body
}

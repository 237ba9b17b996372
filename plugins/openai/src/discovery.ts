/*
 * The context size an endpoint serves, asked of the endpoint itself where it says (no tokens spent):
 *   vLLM    GET  {baseURL}/models       → data[].max_model_len of the configured model
 *           (OpenRouter: data[].context_length)
 *   Ollama  POST {origin}/api/show      → the model's `num_ctx` parameter, else Ollama's default
 *           (the OpenAI-compatible endpoint runs a model at num_ctx, not at its trained context_length)
 * Any other answer (OpenAI, DeepSeek: no such field) discovers nothing.
 */

import { MIN_CONTEXT } from './route-context'

export interface DiscoveredContext {
  tokens: number
  source: string
}

/** Ollama's num_ctx when a model sets none (4096 since 0.6; older builds used 2048 — the truncation check learns that down). */
export const OLLAMA_DEFAULT_NUM_CTX = 4096

type Fetch = (url: string, init?: RequestInit) => Promise<Response>

/** Bytes of a discovery answer read at most (vLLM's model list, Ollama's model card: kilobytes). */
const MAX_ANSWER_BYTES = 4_000_000

async function json(fetcher: Fetch, url: string, init: RequestInit, timeoutMs: number): Promise<any> {
  const abort = new AbortController()
  const response = await fetcher(url, { ...init, signal: AbortSignal.any([abort.signal, AbortSignal.timeout(timeoutMs)]) })
  if (!response.ok || !response.body) {
    abort.abort()
    return undefined
  }
  // Read up to the cap and no further: an endpoint streaming without end must not fill the memory
  // for as long as the timeout lets it (gigabytes on loopback).
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > MAX_ANSWER_BYTES) {
      abort.abort()
      return undefined
    }
    chunks.push(chunk)
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

/**
 * Ollama's `num_ctx` in a model's `parameters` text (one `name value` a line). Line by line: a
 * pattern like `(?:^|\n)\s*num_ctx` retried after every newline of a long blank answer is quadratic.
 */
function numCtxParameter(parameters: string): number | undefined {
  for (const line of parameters.split('\n')) {
    const found = /^[ \t]*num_ctx[ \t]+(\d{1,12})[ \t\r]*$/.exec(line.length > 200 ? '' : line)
    if (found) return positive(found[1])
  }
  return undefined
}

/** The largest context a model is believed to serve (MIN_CONTEXT: the smallest). */
const MAX_CONTEXT = 100_000_000

/**
 * A context size as an endpoint states it (a number, or digits), within what a served context can be;
 * else undefined. Outside it is not a size to work with (`true` is 1, a context of 1 would refuse
 * every step before it is sent), and the route keeps its default and learns from refusals and cuts.
 */
const positive = (value: unknown) => {
  const number = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : NaN
  return Number.isSafeInteger(number) && number >= MIN_CONTEXT && number <= MAX_CONTEXT ? number : undefined
}

export async function discoverContext(options: { baseURL: string, model: string, apiKey: string, timeoutMs?: number, fetch?: Fetch }): Promise<DiscoveredContext | undefined> {
  const fetcher = options.fetch ?? fetch
  const timeoutMs = options.timeoutMs ?? 3000
  const base = options.baseURL.replace(/\/+$/, '')
  const origin = base.replace(/\/v1$/, '')
  const headers = { authorization: `Bearer ${options.apiKey}`, 'content-type': 'application/json' }
  // Both asked at once (3 s at most together); vLLM's answer wins where both answer.
  const [models, show] = await Promise.all([
    json(fetcher, `${base}/models`, { headers }, timeoutMs).catch(() => undefined),
    json(fetcher, `${origin}/api/show`, { method: 'POST', headers, body: JSON.stringify({ model: options.model }) }, timeoutMs).catch(() => undefined),
  ])
  const entry = Array.isArray(models?.data) ? models.data.find((m: any) => m?.id === options.model) : undefined
  const served = positive(entry?.max_model_len)
  if (served) return { tokens: served, source: `${base}/models max_model_len` }
  // OpenRouter lists each model's context as `context_length`.
  const listed = positive(entry?.context_length)
  if (listed) return { tokens: listed, source: `${base}/models context_length` }
  if (show && typeof show === 'object' && ('model_info' in show || 'parameters' in show)) {
    const numCtx = typeof show.parameters === 'string' ? numCtxParameter(show.parameters) : undefined
    if (numCtx) return { tokens: numCtx, source: `${origin}/api/show num_ctx` }
    const trained = Object.entries(show.model_info ?? {}).find(([key]) => key.endsWith('.context_length'))?.[1]
    const tokens = Math.min(OLLAMA_DEFAULT_NUM_CTX, positive(trained) ?? OLLAMA_DEFAULT_NUM_CTX)
    return { tokens, source: `${origin}/api/show (Ollama's default num_ctx)` }
  }
  return undefined
}

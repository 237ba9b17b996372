/*
 * The context size an endpoint serves, asked of the endpoint itself where it says (no tokens spent):
 *   vLLM    GET  {baseURL}/models       → data[].max_model_len of the configured model
 *           (OpenRouter: data[].context_length)
 *   Ollama  POST {origin}/api/show      → the model's `num_ctx` parameter, else Ollama's default
 *           (the OpenAI-compatible endpoint runs a model at num_ctx, not at its trained context_length)
 * Any other answer (OpenAI, DeepSeek: no such field) discovers nothing.
 */

export interface DiscoveredContext {
  tokens: number
  source: string
}

/** Ollama's num_ctx when a model sets none (4096 since 0.6; older builds used 2048 — the truncation check learns that down). */
export const OLLAMA_DEFAULT_NUM_CTX = 4096

type Fetch = (url: string, init?: RequestInit) => Promise<Response>

async function json(fetcher: Fetch, url: string, init: RequestInit, timeoutMs: number): Promise<any> {
  const response = await fetcher(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
  if (!response.ok) return undefined
  // A discovery answer is small; a large one is not what is looked for.
  const text = await response.text()
  if (text.length > 4_000_000) return undefined
  return JSON.parse(text)
}

const positive = (value: unknown) => {
  const number = Number(value)
  return Number.isSafeInteger(number) && number > 0 ? number : undefined
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
    const numCtx = positive(/(?:^|\n)\s*num_ctx\s+(\d+)/.exec(String(show.parameters ?? ''))?.[1])
    if (numCtx) return { tokens: numCtx, source: `${origin}/api/show num_ctx` }
    const trained = Object.entries(show.model_info ?? {}).find(([key]) => key.endsWith('.context_length'))?.[1]
    const tokens = Math.min(OLLAMA_DEFAULT_NUM_CTX, positive(trained) ?? OLLAMA_DEFAULT_NUM_CTX)
    return { tokens, source: `${origin}/api/show (Ollama's default num_ctx)` }
  }
  return undefined
}

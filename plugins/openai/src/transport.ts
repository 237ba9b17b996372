import OpenAI from 'openai'
import type { StreamChunk } from './stream'

/** Characters of a refused request's body kept (it is shown cut, redacted). */
export const BODY_CHARS = 8000

/** What a route's transport needs of its config. */
export interface TransportRoute {
  apiKey: string
  baseURL: string
  timeoutMs: number
  maxRetries: number
}

/** Where a transport leaves what the host logs: the SDK's retry notices (not yet scrubbed of the key). */
export interface TransportLog {
  warn(text: string): void
  debug(text: string): void
}

/** One streamed request as the route opens it. */
export interface OpenRequest {
  /** The Chat Completions body (`stream: true`). */
  body: Record<string, unknown>
  /** Aborted by the route: a cancel, a stall, or the step ended early. */
  signal: AbortSignal
  /** Where the transport leaves a refused request's body (the SDK keeps only its `error.message`). */
  refused: { body?: string }
}

/**
 * How a route's requests reach the endpoint: the official SDK, on the host's thread (`InlineTransport`)
 * or on a thread of its own (worker-transport.ts). `open` behaves as the SDK's streaming `create`: it
 * resolves once the endpoint accepted the request, with its chunks in order, and rejects (or its chunks
 * end in a throw) with the SDK's errors — the route turns them into coded ones (model-fault.ts).
 */
export interface ModelTransport {
  open(request: OpenRequest): Promise<AsyncIterable<StreamChunk>>
  close(): void
}

/** The header a route's fetch reads the request's id from (and strips) to leave a refused body where the request waits for it. */
const STEP_HEADER = 'x-taskward-step'

/** A value as text: strings as they are, anything else as JSON (else String). */
export function logText(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof Error) return value.message
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}

/** The official SDK on the host's thread (config `transport: inline`). */
export class InlineTransport implements ModelTransport {
  readonly client: OpenAI
  /** Requests in flight, by their STEP_HEADER id: where the fetch leaves a refused request's body. */
  private readonly refusals = new Map<string, { body?: string }>()
  private ids = 0

  constructor(route: TransportRoute, log: TransportLog) {
    const text = (args: unknown[]) => args.map(logText).join(' ')
    this.client = new OpenAI({
      apiKey: route.apiKey,
      baseURL: route.baseURL,
      timeout: route.timeoutMs,
      maxRetries: route.maxRetries,
      logLevel: 'info',
      fetch: async (url: any, init?: any) => {
        // The SDK hands its own Headers (or a record) per request: the id is taken out in place.
        const headers = init?.headers
        let id: string | null | undefined
        if (headers instanceof Headers) {
          id = headers.get(STEP_HEADER)
          headers.delete(STEP_HEADER)
        } else if (headers && typeof headers === 'object') {
          id = headers[STEP_HEADER]
          delete headers[STEP_HEADER]
        }
        const response = await fetch(url, init)
        const store = id ? this.refusals.get(id) : undefined
        // The latest attempt's: a refusal that a retry then passed is not what a later failure said.
        if (store) store.body = response.ok ? undefined : (await response.clone().text().catch(() => '')).slice(0, BODY_CHARS)
        return response
      },
      logger: {
        error: (...args) => log.warn(text(args)),
        warn: (...args) => log.warn(text(args)),
        info: (...args) => log.debug(text(args)),
        debug: () => {},
      },
    })
  }

  async open({ body, signal, refused }: OpenRequest): Promise<AsyncIterable<StreamChunk>> {
    const id = String(++this.ids)
    this.refusals.set(id, refused)
    try {
      return await this.client.chat.completions.create(body as any as OpenAI.ChatCompletionCreateParamsStreaming, { signal, headers: { [STEP_HEADER]: id } }) as AsyncIterable<StreamChunk>
    } finally {
      // The body of a refusal is read before the SDK rejects; an accepted request has none.
      this.refusals.delete(id)
    }
  }

  close() {}
}

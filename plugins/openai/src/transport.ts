import OpenAI from 'openai'
import { safeString } from './model-fault'
import type { StreamChunk } from './stream'

/** Characters of a refused request's body kept (it is shown cut, redacted). */
export const BODY_CHARS = 8000

/** What a route's transport needs of its config. */
export interface TransportRoute {
  /** The route's name (in messages). */
  route: string
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
  /**
   * Texts to count (TEXT_TOKENS_SOURCE) once the request is sent, where `countsTexts`: their counts in
   * order go to `onCounts` (or nowhere, when they could not be made).
   */
  count?: { texts: string[], onCounts: (counts: number[]) => void }
}

/**
 * How a route's requests reach the endpoint: the official SDK, on the host's thread (`InlineTransport`)
 * or on a thread of its own (worker-transport.ts). `open` behaves as the SDK's streaming `create`: it
 * resolves once the endpoint accepted the request, with its chunks in order, and rejects (or its chunks
 * end in a throw) with the SDK's errors — the route turns them into coded ones (model-fault.ts).
 */
export interface ModelTransport {
  /** Whether `open` counts `count.texts` off the host's thread (else it ignores them). */
  readonly countsTexts: boolean
  open(request: OpenRequest): Promise<AsyncIterable<StreamChunk>>
  close(): void
}

/** The header a route's fetch reads the request's id from (and strips) to leave a refused body where the request waits for it. */
export const STEP_HEADER = 'x-taskward-step'

/** Why a request ends when its route is stopped (the plugin disposed): not the endpoint's doing. */
export const stopped = () => new Error('the model route was stopped (its plugin was disposed)')

/** A value as text: strings as they are, anything else as JSON (else String). */
export function logText(value: unknown): string {
  return typeof value === 'string' ? value : safeString(value)
}

/** The official SDK on the host's thread (config `transport: inline`). */
export class InlineTransport implements ModelTransport {
  readonly client: OpenAI
  /** Counting here would be on the host's thread all the same: the route counts as it lays out. */
  readonly countsTexts = false
  /** Requests in flight, by their STEP_HEADER id: where the fetch leaves a refused request's body. */
  private readonly refusals = new Map<string, { body?: string }>()
  private ids = 0
  /** Requests in flight (their own controllers): ended by `close`. */
  private readonly live = new Set<AbortController>()
  private closed = false

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
    if (this.closed) throw stopped()
    const id = String(++this.ids)
    this.refusals.set(id, refused)
    // A controller of its own, so that `close` can end it; the route's signal ends it too.
    const own = new AbortController()
    const onAbort = () => own.abort()
    signal.addEventListener('abort', onAbort, { once: true })
    if (signal.aborted) own.abort()
    this.live.add(own)
    const release = () => {
      this.live.delete(own)
      signal.removeEventListener('abort', onAbort)
    }
    let stream: AsyncIterable<StreamChunk>
    try {
      stream = await this.client.chat.completions.create(body as any as OpenAI.ChatCompletionCreateParamsStreaming, { signal: own.signal, headers: { [STEP_HEADER]: id } }) as AsyncIterable<StreamChunk>
    } catch (error) {
      release()
      throw this.closed && !signal.aborted ? stopped() : error
    } finally {
      // The body of a refusal is read before the SDK rejects; an accepted request has none.
      this.refusals.delete(id)
    }
    const closedUnder = () => this.closed && !signal.aborted
    return (async function* () {
      let read = false
      try {
        // The SDK's stream ends quietly when aborted: stopped by `close`, that is no complete answer.
        for await (const chunk of stream) yield chunk
        read = true
        if (closedUnder()) throw stopped()
      } finally {
        // Left before its end (the route stopped reading): the request is closed, as the route's own
        // abort would have; a stream read to its end is left as it is.
        if (!read) own.abort()
        release()
      }
    })()
  }

  /** Ends every request in flight: each step fails, saying the route was stopped. */
  close() {
    this.closed = true
    for (const own of this.live) own.abort()
  }
}

import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai'
import type { StreamChunk } from './stream'
import { bodyText } from './body-text'
import { TaskwardError } from '@taskward/protocol'
import { BODY_CHARS, stopped, type ModelTransport, type OpenRequest, type TransportLog, type TransportRoute } from './transport'
import type { EncodingName } from './tokens'
import { WORKER_SOURCE } from './worker-source'

/** An SDK error as the thread sends it (errors do not cross threads with their classes). */
export type ErrorShape =
  | { kind: 'abort' }
  | { kind: 'connection', message: string, timeout: boolean }
  /** `error`: the body's JSON text (a deep body would not cross threads as an object). */
  | { kind: 'status', status?: number, error?: string, message: string, headers?: [string, string][] }
  | { kind: 'other', name: string, message: string }

/** What the thread sends, in batches (one message per turn of its loop). */
type FromThread =
  | { id: number, opened: true }
  /** The counts of the request's `count` texts, in order. */
  | { id: number, counts: number[] }
  /** A chunk as JSON text: copying an object between threads recurses (a chunk nested thousands deep would not arrive). */
  | { id: number, chunk: string }
  | { id: number, done: true }
  | { id: number, error: ErrorShape, refused?: string }
  | { log: 'warn' | 'debug', text: string }

/**
 * Characters of chunks a request's stream may have sent ahead of what the host thread has read; past
 * it the thread stops reading that stream (and TCP holds the endpoint) until the host acknowledges.
 * The host acknowledges every `ACK_CHARS` it read.
 */
const WINDOW_CHARS = 4 * 1024 * 1024
const ACK_CHARS = 1024 * 1024


let openaiPath: string | undefined

/** `__filename` in the CommonJS build (where import.meta is empty), import.meta.url in ESM and the sources. */
const requireHere = () => createRequire(typeof __filename === 'string' ? __filename : import.meta.url)

/** The SDK's error again, of its class, from what the thread sent: the route reads status, body and message as the SDK left them. */
export function errorOf(shape: ErrorShape): Error {
  if (shape.kind === 'abort') return new APIUserAbortError()
  if (shape.kind === 'connection') return shape.timeout ? new APIConnectionTimeoutError({ message: shape.message }) : new APIConnectionError({ message: shape.message })
  if (shape.kind === 'status') {
    const headers = shape.headers ? new Headers(shape.headers) : undefined
    const body = shape.error === undefined ? undefined : JSON.parse(shape.error)
    const error = shape.status && headers ? APIError.generate(shape.status, { error: body }, shape.message, headers) : new APIError(shape.status, body, shape.message, headers)
    // The SDK made the message from the body once already; made again it could differ (a status prefix twice).
    error.message = shape.message
    return error
  }
  const error = new Error(shape.message)
  error.name = shape.name
  return error
}

/** One request's chunks as they come from the thread, read once in order. */
class ThreadStream implements AsyncIterable<StreamChunk> {
  /** Chunks as their JSON text: parsed when read (JSON.parse copes with any depth). */
  private chunks: string[] = []
  private read = 0
  private ended = false
  private failure?: Error
  private waiting?: () => void
  /** Characters read since the thread was last told. */
  private unacknowledged = 0

  constructor(private onReturn: () => void, private onRead: (chars: number) => void) {}

  push(chunk: string) {
    this.chunks.push(chunk)
    this.wake()
  }

  /** Drops what was not read yet: an aborted request hands out nothing more, as the SDK's stream does not. */
  discard() {
    this.chunks = []
    this.read = 0
  }

  end(failure?: Error) {
    if (this.ended) return
    this.ended = true
    this.failure = failure
    this.wake()
  }

  private wake() {
    const waiting = this.waiting
    this.waiting = undefined
    waiting?.()
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamChunk> {
    return {
      next: async (): Promise<IteratorResult<StreamChunk>> => {
        while (this.read === this.chunks.length && !this.ended) await new Promise<void>((resolve) => { this.waiting = resolve })
        if (this.read < this.chunks.length) {
          const text = this.chunks[this.read]
          this.chunks[this.read++] = undefined as any
          this.unacknowledged += text.length
          if (this.unacknowledged >= ACK_CHARS && !this.ended) {
            this.onRead(this.unacknowledged)
            this.unacknowledged = 0
          }
          const value = JSON.parse(text) as StreamChunk
          // Read ones are dropped now and then, not at each chunk (a shift per chunk is quadratic).
          if (this.read > 1024 && this.read * 2 > this.chunks.length) {
            this.chunks = this.chunks.slice(this.read)
            this.read = 0
          }
          return { value, done: false }
        }
        if (this.failure) throw this.failure
        return { value: undefined, done: true }
      },
      return: async (): Promise<IteratorResult<StreamChunk>> => {
        this.onReturn()
        this.end()
        return { value: undefined, done: true }
      },
    }
  }
}

/** A request in flight: its opening (until the endpoint accepted it), then its stream. */
interface InFlight {
  stream: ThreadStream
  refused: { body?: string }
  opened?: { resolve: (stream: ThreadStream) => void, reject: (error: unknown) => void }
  onCounts?: (counts: number[]) => void
  signal: AbortSignal
  onAbort: () => void
}

/**
 * The official SDK on a thread of its own (config `transport: worker`, the default): the host's thread
 * keeps laying out requests and running steps while another parses the endpoints' streams — at 500
 * live sessions the SDK, fetch and their streams were a fifth of the host thread's busy time. One thread
 * per route, started at its first request (or `prepare`), unreferenced while nothing is in flight; one
 * that fails ends what it carried as the SDK would (a `MODEL_UNAVAILABLE` step each), and the next
 * request starts another.
 */
export class WorkerTransport implements ModelTransport {
  private worker?: Worker
  private readonly inFlight = new Map<number, InFlight>()
  private ids = 0
  private closed = false

  /** True when the thread loads the route's encoding (`tokenizer`): it counts what `open` is given to count. */
  readonly countsTexts: boolean
  private readonly tokenizer?: { path: string, exact: boolean }

  constructor(private route: TransportRoute, private log: TransportLog, tokenizer?: { encoding: EncodingName, exact: boolean }) {
    if (tokenizer) {
      try {
        this.tokenizer = { path: requireHere().resolve(`gpt-tokenizer/cjs/encoding/${tokenizer.encoding}`), exact: tokenizer.exact }
      } catch {
        // Not where a thread can load it (a bundle without it): the host's thread counts, as inline.
      }
    }
    this.countsTexts = !!this.tokenizer
  }

  /** Starts the thread now (the SDK loads in it before the first request needs it). */
  warm() {
    if (this.closed) return
    try {
      this.thread()
    } catch (error) {
      // Not fatal: each request tries again, and fails as its step (MODEL_UNAVAILABLE) while none starts.
      this.log.warn(this.notStarted(error).message)
    }
  }

  /** A thread that could not be made: what to do about it (it may never start where threads are refused). */
  private notStarted(error: unknown) {
    const why = error instanceof Error ? error.message : String(error)
    return new TaskwardError('MODEL_UNAVAILABLE',
      `Model route "${this.route.route}" could not start its thread (${why}). Set \`transport: inline\` in the openai plugin's config to run the SDK on the host's thread, `
      + 'or let the process make threads (under Node\'s --permission, --allow-worker; else a thread limit); each request tries again.',
      { route: this.route.route, reason: 'thread' })
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    openaiPath ??= requireHere().resolve('openai')
    const { apiKey, baseURL, timeoutMs, maxRetries } = this.route
    const worker = new Worker(WORKER_SOURCE, {
      eval: true, execArgv: [], workerData: { openai: openaiPath, tokenizer: this.tokenizer, bodyChars: BODY_CHARS, windowChars: WINDOW_CHARS, route: { apiKey, baseURL, timeoutMs, maxRetries } },
    })
    worker.unref()
    worker.on('message', (batch: FromThread[]) => {
      for (const entry of batch) this.receive(entry)
    })
    const gone = (why: string) => {
      if (this.worker !== worker) return
      this.worker = undefined
      void worker.terminate()
      const failure = new Error(`the model route's thread ${why}`)
      this.log.warn(`${failure.message}; ${this.inFlight.size} requests in flight end with it, the next one starts another thread`)
      for (const id of [...this.inFlight.keys()]) this.finish(id, failure)
    }
    worker.on('error', (error) => gone(`failed: ${error.message}`))
    // A batch the host thread could not read: what it carried is lost, so every request in flight ends.
    worker.on('messageerror', (error) => gone(`sent what could not be read (${error.message})`))
    worker.on('exit', (code) => gone(`exited (${code})`))
    this.worker = worker
    return worker
  }

  private receive(entry: FromThread) {
    if ('log' in entry) {
      if (entry.log === 'warn') this.log.warn(entry.text)
      else this.log.debug(entry.text)
      return
    }
    const request = this.inFlight.get(entry.id)
    if (!request) return
    if ('chunk' in entry) request.stream.push(entry.chunk)
    else if ('counts' in entry) request.onCounts?.(entry.counts)
    else if ('opened' in entry) {
      request.opened?.resolve(request.stream)
      request.opened = undefined
    } else if ('done' in entry) this.finish(entry.id)
    else {
      if (entry.refused !== undefined) request.refused.body = entry.refused
      this.finish(entry.id, errorOf(entry.error))
    }
  }

  /** Ends a request: its opening rejects, or its stream ends (with the failure, if any). */
  private finish(id: number, failure?: Error) {
    const request = this.inFlight.get(id)
    if (!request) return
    this.inFlight.delete(id)
    request.signal.removeEventListener('abort', request.onAbort)
    if (request.opened) request.opened.reject(failure ?? new Error('the model route\'s thread ended the request before it opened'))
    else request.stream.end(failure)
    if (!this.inFlight.size) this.worker?.unref()
  }

  open({ body, signal, refused, count }: OpenRequest): Promise<AsyncIterable<StreamChunk>> {
    if (this.closed) return Promise.reject(stopped())
    if (signal.aborted) return Promise.reject(new APIUserAbortError())
    let worker: Worker
    try {
      worker = this.thread()
    } catch (error) {
      return Promise.reject(this.notStarted(error))
    }
    const id = ++this.ids
    return new Promise((resolve, reject) => {
      // An abort ends the request here at once (as the SDK's own stream ends), and tells the thread.
      // Before the endpoint accepted it, the opening rejects as the SDK's; after, the stream ends quietly
      // as the SDK's does (the route tells an abort from a complete answer by its signal).
      const onAbort = () => {
        this.worker?.postMessage({ id, abort: true })
        const request = this.inFlight.get(id)
        request?.stream.discard()
        this.finish(id, request?.opened ? new APIUserAbortError() : undefined)
      }
      const stream = new ThreadStream(() => {
        if (this.inFlight.has(id)) onAbort()
      }, (chars) => this.worker?.postMessage({ id, read: chars }))
      this.inFlight.set(id, { stream, refused, opened: { resolve, reject }, signal, onAbort, ...(count && this.tokenizer ? { onCounts: count.onCounts } : {}) })
      signal.addEventListener('abort', onAbort, { once: true })
      worker.ref()
      try {
        // As JSON text: the SDK would serialize it on this thread anyway, and a string crosses threads as
        // one copy where an object graph is rebuilt there (and left as garbage by the SDK's own stringify).
        // Made of the texts of messages serialized on earlier steps (body-text.ts).
        worker.postMessage({ id, body: bodyText(body), ...(count && this.tokenizer ? { count: count.texts } : {}) })
      } catch (error) {
        // A body that cannot be serialized (nothing a layout makes): the step fails with it.
        this.finish(id, error as Error)
      }
    })
  }

  close() {
    this.closed = true
    const worker = this.worker
    this.worker = undefined
    for (const id of [...this.inFlight.keys()]) this.finish(id, stopped())
    void worker?.terminate()
  }
}

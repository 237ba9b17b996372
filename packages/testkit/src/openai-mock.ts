import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { contextRefusalBody, ollamaShow, vllmModels, type MockDialect } from './mock-dialects'
import { loadMockEncoders, PrefixCache, promptTokens, textTokens } from './mock-tokens'
import { applyMergePatch } from '@taskward/protocol'

/*
 * A loopback OpenAI-compatible server for tests: real HTTP on 127.0.0.1, `POST /v1/chat/completions`
 * answered from a queue of scripted replies, streamed as the API streams (`data: {chunk}\n\n` …
 * `data: [DONE]\n\n`). Every request is recorded (body, headers, whether the client aborted it).
 */

export interface MockToolCall {
  name: string
  /** The raw argument text (a JSON string, or deliberately not JSON). */
  args: string | Record<string, unknown>
  id?: string
}

/** A streamed completion: text in pieces of `chunkSize`, tool-call arguments split over `argPieces` chunks, usage last. */
export interface MockStream {
  kind?: 'stream'
  text?: string
  toolCalls?: MockToolCall[]
  reasoning?: string
  usage?: { prompt_tokens: number, completion_tokens: number } | false
  chunkSize?: number
  argPieces?: number
  /** Pause between chunks (ms). */
  delayMs?: number
}

export type MockReply =
  | MockStream
  /** An error status (with `Retry-After` when given) and a JSON error body (`body` as given, else `{error: {message}}`). */
  | { kind: 'status', status: number, retryAfter?: string, message?: string, body?: unknown }
  /** Headers and `text` (if any) are sent, then nothing until the client gives up. */
  | { kind: 'stall', text?: string }
  /** The connection is destroyed before any answer. */
  | { kind: 'reset' }

export interface MockRequest {
  body: any
  headers: Record<string, string | string[] | undefined>
  /** True once the client closed the connection before the answer ended. */
  aborted: boolean
  /** performance.now() when the client closed it, for an aborted request. */
  abortedAt?: number
  /** performance.now() when the request arrived, when the first body byte went out, when it ended. */
  receivedAt: number
  firstByteAt?: number
  endedAt?: number
  reply?: MockReply
  /** Prompt tokens as the endpoint counted them (mock-tokens.ts), when it counted. */
  promptTokens?: number
  /** True when the endpoint cut the prompt silently (the `ollama` dialect past its context). */
  truncated?: boolean
}

export type MockScript = MockReply | ((request: MockRequest, index: number) => MockReply | Promise<MockReply>)

/** A streamed text reply. */
export const mockText = (text: string, extra: Partial<MockStream> = {}): MockStream => ({ text, ...extra })

/** A streamed reply that calls tools (arguments as objects are sent as JSON). */
export const mockTools = (...calls: (MockToolCall | [name: string, args?: Record<string, unknown>])[]): MockStream => ({
  toolCalls: calls.map((call) => Array.isArray(call) ? { name: call[0], args: call[1] ?? {} } : call),
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export class OpenAIMock {
  readonly requests: MockRequest[] = []
  private queue: MockScript[] = []
  private served = 0
  private server!: Server
  private sockets = new Set<import('node:net').Socket>()
  port = 0
  /** What is answered when the queue is empty: a 400 that says so (never retried, never silent). */
  fallback: MockScript = { kind: 'status', status: 400, message: 'openai-mock: no reply scripted for this request' }
  /**
   * The endpoint's context, as a server of `dialect` enforces it: a prompt past `tokens` is refused with
   * that dialect's 400, or, for `ollama`, cut from the front silently (the usage reports what was kept).
   * `discoverable`: `GET /v1/models` (vLLM dialects) or `POST /api/show` (ollama) tells the size.
   */
  context?: {
    tokens: number, dialect: MockDialect, discoverable?: boolean, model?: string
    /**
     * `uncached`: `prompt_tokens` counts only what the prefix cache did not serve, and no cached field is
     * sent — as Ollama builds whose prompt_eval_count leaves out the KV-cache hit (ollama#2068, #16414).
     */
    promptCount?: 'whole' | 'uncached'
  }
  /** Prefix caching: usage reports the prompt tokens served from it (DeepSeek's fields for `deepseek`). */
  readonly cache = new PrefixCache()

  /**
   * `keepAliveTimeoutMs`: how long an idle connection stays open (Node's default, 5 s, races a client
   * whose loop is too busy to drop it in time: it reuses a socket the mock is closing, a connection error).
   */
  static async start(options: { keepAliveTimeoutMs?: number } = {}): Promise<OpenAIMock> {
    const mock = new OpenAIMock()
    await Promise.all([mock.listen(), loadMockEncoders()])
    if (options.keepAliveTimeoutMs !== undefined) mock.server.keepAliveTimeout = options.keepAliveTimeoutMs
    return mock
  }

  /** The `baseURL` to give the SDK. */
  get baseURL() {
    return `http://127.0.0.1:${this.port}/v1`
  }

  /** Queue replies, answered in order, one per request. */
  script(...replies: MockScript[]) {
    this.queue.push(...replies)
    return this
  }

  pending() {
    return this.queue.length
  }

  reset() {
    this.queue = []
    this.requests.length = 0
  }

  async close() {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private async listen() {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
    this.server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.port = (this.server.address() as AddressInfo).port
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const receivedAt = performance.now()
    let raw = ''
    for await (const chunk of req) raw += chunk
    if (this.context?.discoverable && this.discovery(req, res)) return
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `openai-mock: no route ${req.method} ${req.url}` } }))
      return
    }
    let body: any
    try {
      body = JSON.parse(raw)
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'openai-mock: body is not JSON' } }))
      return
    }
    const record: MockRequest = { body, headers: req.headers, aborted: false, receivedAt }
    this.requests.push(record)
    res.on('close', () => {
      if (res.writableFinished) return
      record.aborted = true
      record.abortedAt = performance.now()
    })
    const index = this.served++
    let cached = 0
    if (this.context) {
      const tokens = await promptTokens(body)
      record.promptTokens = tokens.length
      if (tokens.length > this.context.tokens) {
        if (this.context.dialect !== 'ollama') {
          const refusal = contextRefusalBody(this.context.dialect, this.context.tokens, tokens.length, Number(body.max_tokens) || 0)
          res.writeHead(refusal.status, { 'content-type': 'application/json' })
          res.end(JSON.stringify(refusal.body))
          record.endedAt = performance.now()
          return
        }
        // Ollama keeps the end of the prompt and drops the front: the system prompt first.
        record.truncated = true
        record.promptTokens = this.context.tokens
      } else {
        cached = this.cache.serve(tokens)
      }
    }
    const script = this.queue.shift() ?? this.fallback
    const reply = typeof script === 'function' ? await script(record, index) : script
    record.reply = reply
    await this.answer(reply, record, res, cached)
  }

  /** Answers a context-size question in the configured dialect; false when `req` is not one. */
  private discovery(req: IncomingMessage, res: ServerResponse): boolean {
    const { dialect, tokens, model } = this.context!
    let answer: unknown
    if (req.method === 'GET' && req.url?.endsWith('/v1/models') && dialect.startsWith('vllm')) answer = vllmModels(model ?? 'mock', tokens)
    if (req.method === 'POST' && req.url === '/api/show' && dialect === 'ollama') answer = ollamaShow(tokens)
    if (!answer) return false
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(answer))
    return true
  }

  private async answer(reply: MockReply, record: MockRequest, res: ServerResponse, cached = 0) {
    const id = `chatcmpl-mock-${this.served}`
    const model = String(record.body.model ?? 'mock')
    const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
      id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model,
      choices: [{ index: 0, delta, finish_reason: finish }], ...extra,
    })
    const send = (data: unknown) => {
      if (res.destroyed) return false
      record.firstByteAt ??= performance.now()
      res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`)
      return true
    }
    const sse = () => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })

    if (reply.kind === 'reset') {
      res.socket?.destroy()
      return
    }
    if (reply.kind === 'status') {
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (reply.retryAfter !== undefined) headers['retry-after'] = reply.retryAfter
      res.writeHead(reply.status, headers)
      // `body`: sent as it is (vLLM's flat `{"object":"error","message":…}`, which the SDK does not read).
      res.end(JSON.stringify(reply.body ?? { error: { message: reply.message ?? `openai-mock: status ${reply.status}`, type: 'mock_error' } }))
      record.endedAt = performance.now()
      return
    }
    if (reply.kind === 'stall') {
      sse()
      send(chunk({ role: 'assistant', content: '' }))
      if (reply.text) send(chunk({ content: reply.text }))
      // Nothing more: the client's timeout (or cancel) ends it.
      await new Promise<void>((resolve) => res.on('close', () => resolve()))
      return
    }

    sse()
    const pause = async () => {
      if (reply.delayMs) await sleep(reply.delayMs)
    }
    send(chunk({ role: 'assistant', content: '' }))
    const size = Math.max(1, reply.chunkSize ?? 8)
    if (reply.reasoning) {
      for (let i = 0; i < reply.reasoning.length; i += size) {
        if (!send(chunk({ reasoning_content: reply.reasoning.slice(i, i + size) }))) return
        await pause()
      }
    }
    const text = reply.text ?? ''
    for (let i = 0; i < text.length; i += size) {
      if (!send(chunk({ content: text.slice(i, i + size) }))) return
      await pause()
    }
    const calls = reply.toolCalls ?? []
    for (const [index, call] of calls.entries()) {
      const args = typeof call.args === 'string' ? call.args : JSON.stringify(call.args)
      const pieces = Math.max(1, reply.argPieces ?? 3)
      const step = Math.max(1, Math.ceil(args.length / pieces))
      // The first delta names the call; the arguments follow in pieces, as the API sends them.
      send(chunk({ tool_calls: [{ index, id: call.id ?? `call_${this.served}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }))
      for (let i = 0; i < args.length; i += step) {
        if (!send(chunk({ tool_calls: [{ index, function: { arguments: args.slice(i, i + step) } }] }))) return
        await pause()
      }
    }
    send(chunk({}, calls.length ? 'tool_calls' : 'stop'))
    const wantsUsage = record.body.stream_options?.include_usage
    if (wantsUsage && reply.usage !== false) {
      let usage: Record<string, unknown> & { prompt_tokens: number, completion_tokens: number }
      if (reply.usage) {
        usage = reply.usage
      } else {
        // Counted for real (mock-tokens.ts): the prompt as a chat template renders it, the output's text.
        const prompt = record.promptTokens ?? (await promptTokens(record.body)).length
        record.promptTokens = prompt
        usage = { prompt_tokens: prompt, completion_tokens: await textTokens(model, text + calls.map((c) => typeof c.args === 'string' ? c.args : JSON.stringify(c.args)).join('')) }
        if (this.context?.promptCount === 'uncached') usage.prompt_tokens = prompt - cached
        else if (this.context?.dialect === 'deepseek') Object.assign(usage, { prompt_cache_hit_tokens: cached, prompt_cache_miss_tokens: prompt - cached })
        else if (this.context) usage.prompt_tokens_details = { cached_tokens: cached }
      }
      send({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })
    }
    send('[DONE]')
    res.end()
    record.endedAt = performance.now()
  }
}

const CUT = Symbol('cut')

/**
 * The task state a request shows, read as a model would: its task-state notes in order, each the whole
 * state or (its header says so) a JSON merge patch on the state before it. Undefined without a note; CUT
 * when a note is not JSON (the state was cut).
 */
export function taskStateOf(messages: any[]): unknown {
  let state: unknown
  for (const message of messages) {
    const content = String(message?.content ?? '')
    if (message?.role !== 'user' || !content.startsWith('[host: task state (task_status)')) continue
    const newline = content.indexOf('\n')
    let body: unknown
    try {
      body = JSON.parse(content.slice(newline + 1))
    } catch {
      return CUT
    }
    state = content.slice(0, newline).includes('JSON merge patch') ? applyMergePatch(state, body) : body
  }
  return state
}

export interface TaskPlayerOptions {
  plan?: { acceptanceCriteria: string[], nodes: { id: string, title: string, dependsOn?: string[] }[] }
  /** Usage reported per step (default: the mock's estimate). */
  usage?: { prompt_tokens: number, completion_tokens: number }
  /** A file the main agent reads before writing each node's file (a long task's tool results). */
  read?: string
}

/**
 * A stateless model that plays a supervised task from what the adapter sends: the latest task-state note
 * (after the transcript), the turn's input and the tool results since. Main agent: plan, start each
 * ready node, write `<node>.txt`, report it citing the write's seq, request completion; a user
 * message asking to "propose a repair" reads `a.txt` and proposes reworking node `a`. Reviewer:
 * read the log, then pass. Any tool error ends the turn with a text answer (never a loop).
 */
export function taskPlayer(options: TaskPlayerOptions = {}) {
  const plan = options.plan ?? {
    acceptanceCriteria: ['each node writes its file'],
    nodes: [{ id: 'a', title: 'write a' }, { id: 'b', title: 'write b', dependsOn: ['a'] }],
  }
  const extra = options.usage ? { usage: options.usage } : {}
  const text = (value: string): MockStream => ({ text: value, ...extra })
  const call = (name: string, args: Record<string, unknown>): MockStream => ({ toolCalls: [{ name, args }], ...extra })
  return (request: MockRequest): MockReply => {
    const messages: any[] = request.body.messages ?? []
    const system = String(messages[0]?.content ?? '')
    const inputIndex = messages.findLastIndex((m) => m.role === 'user' && !String(m.content).startsWith('[host:'))
    const input = String(messages[inputIndex]?.content ?? '')
    const turn = messages.slice(inputIndex + 1)
    // Tool messages may be cut by the adapter (not JSON then): the seq and an error code lead them.
    const results = turn.filter((m) => m.role === 'tool').map((m) => {
      const content = String(m.content)
      const seq = Number(/^\{"seq":(\d+)/.exec(content)?.[1])
      const code = /^\{"seq":\d+,"error":\{"code":"([A-Z_]+)"/.exec(content)?.[1]
      return { seq, ...(code ? { error: { code } } : {}) }
    })
    const calls = turn.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []).map((c: any) => c.function.name)
    const last = results.at(-1)
    if (last?.error) return text(`The tool failed (${last.error.code}); stopping here.`)

    if (system.includes('You are a reviewer')) {
      if (!calls.includes('review_read_log')) return call('review_read_log', { from: 0, limit: 200 })
      return call('review_verdict', { verdict: 'pass', findings: [], evidenceSeqs: [] })
    }
    if (/propose a repair/i.test(input)) {
      if (!calls.includes('read')) return call('read', { path: 'a.txt' })
      if (!calls.includes('task_propose_repair')) {
        return call('task_propose_repair', { title: 'redo a', reason: 'a.txt is wrong', rootNodeIds: ['a'], evidenceSeqs: [last?.seq] })
      }
      return text('Proposed the repair; it waits for your confirmation.')
    }
    // The task state: the state notes in order (the adapter appends one after the transcript when it changed).
    const state: any = taskStateOf(messages)
    if (state === CUT) return text('The task state was cut; stopping.')
    const phase = state?.task?.phase
    if (phase === 'planning') {
      return calls.includes('task_submit_plan') ? text('Plan submitted for review.') : call('task_submit_plan', plan)
    }
    if (phase !== 'active') return text(`Nothing for me to do while the task is ${phase ?? 'absent'}.`)
    const running = state.nodes.find((n: any) => n.status === 'running')
    if (running) {
      if (calls.at(-1) === 'write') return call('task_report_stage', { nodeId: running.id, summary: `wrote ${running.id}.txt`, evidenceSeqs: [last?.seq] })
      if (options.read && calls.at(-1) !== 'read') return call('read', { path: options.read })
      const why = state.task.reopenedFromProposalId ? 'repaired' : 'first pass'
      return call('write', { path: `${running.id}.txt`, content: `${running.id} done (${why}, attempt ${running.attempt ?? 1})\n` })
    }
    if (state.readyNodes?.length) return call('task_start_node', { nodeId: state.readyNodes[0] })
    if (state.nodes.every((n: any) => n.status === 'passed')) {
      return calls.includes('task_request_completion') ? text('Completion requested.') : call('task_request_completion', { summary: 'every node passed' })
    }
    return text('Waiting for reviews.')
  }
}

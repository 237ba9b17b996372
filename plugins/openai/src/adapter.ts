import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai'
import type { Context } from 'cordis'
import type { ModelAdapter, ModelRequest, Session } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import type { ContextConfig, RouteConfig } from './config'
import { buildMessages, estimateTokens, type ChatMessage } from './context'
import { toolParameters, type JsonSchema } from './json-schema'
import { instructionsFor } from './prompts'
import { redact } from './redact'
import { EventWindows } from './window'
import { StepAssembler, type AssembledStep, type StreamChunk } from './stream'

/** Why a finished step's own controller is aborted (nothing is waiting on it by then). */
const STEP_ENDED = Object.freeze({ reason: 'step ended' })

/** Resolves with the task state a session's model should see (the supervisor's `task_status`), if any. */
export type TaskStateSource = (session: Session) => Promise<unknown>

/**
 * One route: one endpoint and model over the official SDK. Each step rebuilds a bounded context from
 * the session log, streams one Chat Completion with every host tool offered, and hands back the
 * assembled step. Every failure becomes `MODEL_UNAVAILABLE` (key scrubbed); a cancel aborts the
 * request at once.
 */
export class OpenAIRoute implements ModelAdapter {
  readonly client: OpenAI
  private readonly windows: EventWindows
  /** The host's tool registry, read once: `ctx.tools` goes through cordis' tracing proxy (~0.1 ms a read). */
  private readonly registry: Context['tools']
  private toolCache?: { defs: unknown[], tools: { type: 'function', function: { name: string, description: string, parameters: JsonSchema } }[] }

  constructor(
    private ctx: Context,
    readonly config: RouteConfig & { apiKey: string },
    private context: ContextConfig,
    private taskState?: TaskStateSource,
  ) {
    // A message longer than the whole budget in characters is cut by the builder anyway.
    const tools = ctx.tools
    this.registry = (tools as any)[Symbol.for('cordis.original')] ?? tools
    this.windows = new EventWindows(ctx, context.maxEvents, context.toolResultChars, context.contextTokens * 4)
    const logger = ctx.logger('openai')
    const scrub = (args: unknown[]) => args.map((arg) => redact(typeof arg === 'string' ? arg : safeString(arg), config.apiKey))
    this.client = new OpenAI({
      apiKey: config.apiKey,
      baseURL: config.baseURL,
      timeout: config.timeoutMs,
      maxRetries: config.maxRetries,
      logLevel: 'info',
      // The SDK's retry notices go to the host log, with the key scrubbed from anything it prints.
      logger: {
        error: (...args) => logger.warn(...scrub(args) as [string]),
        warn: (...args) => logger.warn(...scrub(args) as [string]),
        info: (...args) => logger.debug(...scrub(args) as [string]),
        debug: () => {},
      },
    })
  }

  /** The chat messages of a request (exposed for tests and the benchmark). */
  async messages(request: ModelRequest): Promise<ChatMessage[]> {
    const session = request.session
    const { events, unread } = await this.windows.latest(session)
    let taskState: unknown
    try {
      taskState = await this.taskState?.(session)
    } catch {
      taskState = undefined
    }
    return buildMessages({ instructions: instructionsFor(request.role, session.cwd), taskState, events, unread }, this.context)
  }

  /** Every host tool as a function tool; converted again only when the registry changed. */
  tools() {
    const defs = this.registry.list()
    if (this.toolCache && this.toolCache.defs.length === defs.length && this.toolCache.defs.every((def, i) => def === defs[i])) {
      return this.toolCache.tools
    }
    const tools = defs.map((tool) => ({
      type: 'function' as const,
      function: { name: tool.name, description: tool.description, parameters: toolParameters(tool.parameters) },
    }))
    this.toolCache = { defs, tools }
    return tools
  }

  async step(request: ModelRequest): Promise<AssembledStep> {
    const assembler = new StepAssembler({ onText: request.onText, reasoningChars: this.context.reasoningChars, maxStepChars: this.context.maxStepChars })
    // Our own controller: aborted by the agent's cancel, or by a stream that stalls past timeoutMs.
    const abort = new AbortController()
    const onCancel = () => abort.abort(request.signal.reason)
    if (request.signal.aborted) onCancel()
    request.signal.addEventListener('abort', onCancel, { once: true })
    // The stall timer is armed once and re-armed only when it fires early: a chunk just notes the time
    // (a timer per chunk costs more than the chunk).
    let stalled = false
    let timer: NodeJS.Timeout | undefined
    let lastChunk = 0
    const watch = (delay: number) => {
      timer = setTimeout(() => {
        const quiet = performance.now() - lastChunk
        if (quiet < this.config.timeoutMs) return watch(this.config.timeoutMs - quiet)
        stalled = true
        abort.abort()
      }, delay)
    }
    // A cancel wins at once, even while the SDK sleeps before a retry.
    const cancelled = new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(new APIUserAbortError()), { once: true }))
    cancelled.catch(() => {})
    try {
      const body = {
        model: this.config.model,
        messages: await this.messages(request) as any[],
        tools: this.tools(),
        stream: true as const,
        stream_options: { include_usage: true },
        ...(this.config.temperature !== undefined ? { temperature: this.config.temperature } : {}),
        ...(this.config.maxOutputTokens !== undefined ? { max_tokens: this.config.maxOutputTokens } : {}),
      }
      if (!body.tools.length) delete (body as any).tools
      const stream = await Promise.race([this.client.chat.completions.create(body, { signal: abort.signal }), cancelled])
      lastChunk = performance.now()
      watch(this.config.timeoutMs)
      // An abort (cancel, stall) ends the SDK's stream quietly: the check after the loop tells it from
      // an answer that is complete.
      for await (const chunk of stream) {
        lastChunk = performance.now()
        assembler.push(chunk as StreamChunk)
      }
      if (abort.signal.aborted) throw new APIUserAbortError()
      const step = assembler.finish()
      // An endpoint that ignores `include_usage` (some vLLM and Ollama builds) must not make the token
      // budget silently void: the step is charged an estimate (≈ 4 characters a token), marked as such.
      if (!step.usage) {
        const output = (step.text ?? '') + JSON.stringify(step.toolCalls ?? [])
        step.usage = {
          promptTokens: estimateTokens(JSON.stringify(body.messages) + JSON.stringify(body.tools ?? [])),
          completionTokens: estimateTokens(step.toolCalls?.length ? output : step.text ?? ''),
          estimated: true,
        }
      }
      if (step.reasoningExcerpt) this.ctx.logger('openai').debug('reasoning excerpt (%s): %s', this.config.route, step.reasoningExcerpt)
      return step
    } catch (error) {
      if (request.signal.aborted) throw new TaskwardError('MODEL_UNAVAILABLE', 'The model request was cancelled.', { route: this.config.route, cancelled: true })
      throw this.fault(error, stalled)
    } finally {
      clearTimeout(timer)
      request.signal.removeEventListener('abort', onCancel)
      // Closes the request on every way out; a shared reason spares an AbortError (and its stack) per step.
      if (!abort.signal.aborted) abort.abort(STEP_ENDED)
    }
  }

  /** A coded, key-free error for any failure of a step. */
  private fault(error: unknown, stalled: boolean): TaskwardError {
    const route = this.config.route
    const scrub = (text: string) => redact(text, this.config.apiKey)
    if (stalled) {
      return new TaskwardError('MODEL_UNAVAILABLE',
        `Model route "${route}" sent nothing for ${this.config.timeoutMs} ms; the step was stopped. Retry the turn, or raise timeoutMs.`,
        { route, reason: 'stalled' })
    }
    if (error instanceof APIConnectionError) {
      return new TaskwardError('MODEL_UNAVAILABLE',
        `Model route "${route}" could not be reached (${scrub(error.message)}) after ${this.config.maxRetries} retries; check baseURL and the network, then retry the turn.`,
        { route, reason: 'connection' })
    }
    if (error instanceof APIError) {
      const status = error.status
      const hint = status === 401 || status === 403 ? 'the endpoint refused the API key; check it'
        : status === 404 ? 'check the model name and baseURL'
          : status === 429 ? 'the endpoint is rate limiting; wait and retry the turn'
            : status && status >= 500 ? 'the endpoint failed; retry the turn later'
              : 'the endpoint refused the request'
      return new TaskwardError('MODEL_UNAVAILABLE',
        `Model route "${route}" answered ${status ?? 'an error'}: ${scrub(error.message).slice(0, 500)} — ${hint}.`,
        { route, status, reason: 'status' })
    }
    if (error instanceof TaskwardError) return error
    return new TaskwardError('MODEL_UNAVAILABLE',
      `Model route "${route}" failed: ${scrub(error instanceof Error ? error.message : String(error)).slice(0, 500)}. Retry the turn.`,
      { route, reason: 'stream' })
  }
}

function safeString(value: unknown) {
  if (value instanceof Error) return value.message
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}

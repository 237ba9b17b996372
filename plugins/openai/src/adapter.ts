import { APIUserAbortError } from 'openai'
import type { Context } from 'cordis'
import type { ModelAdapter, ModelRequest, Session } from '@taskward/host'
import { TaskwardError, type SessionEvent } from '@taskward/protocol'
import type { ContextConfig, RouteConfig } from './config'
import { layoutMessages, MIN_RESULT_CHARS, shownTokens, type ChatMessage, type Layout, type StateNote } from './context'
import { modelFault } from './model-fault'
import { discoverContext } from './discovery'
import { judgePromptReport, RouteContext } from './route-context'
import { DeferredCounts, SAFETY_MARGIN, TokenCounter } from './tokens'
import { toolParameters, type JsonSchema } from './json-schema'
import { instructionsFor } from './prompts'
import { redact } from './redact'
import { EventWindows } from './window'
import { InlineTransport, type ModelTransport } from './transport'
import { WorkerTransport } from './worker-transport'
import { frozen } from './body-text'
import { readWindowStart, windowRecord, WINDOW_EVENT } from './window-record'
import { StepAssembler, type AssembledStep, type StreamChunk } from './stream'

/** Why a finished step's own controller is aborted (nothing is waiting on it by then). */
const STEP_ENDED = Object.freeze({ reason: 'step ended' })

/** Resolves with the task state a session's model should see (the supervisor's `task_status`), if any. */
export type TaskStateSource = (session: Session) => Promise<unknown>

/** Called when a main session's turn ended MODEL_CONTEXT_EXCEEDED: pauses its task (index.ts). */
export type ContextExceededHandler = (session: Session, error: TaskwardError) => Promise<void>

/** How many sessions' window starts a route remembers. */
const WINDOWS = 64

/** One request, as built for a step. */
interface Plan {
  body: Record<string, any> & { messages: ChatMessage[], tools?: unknown[] }
  layout: Layout
  /** Raw (uncalibrated) tokens of messages and tools. */
  raw: number
  /** The calibrated estimate of the whole request, margin excluded. */
  estimate: number
  limit: number
  /** The window's start and new notes to record in the session before it is sent (window-record.ts). */
  record?: { keepFrom: number, notes?: StateNote[] }
  /**
   * Raw tokens this request adds to what the route sent before and an endpoint's prefix cache may hold:
   * the session's previous request when it extends it (same tools, the window's start kept), else a
   * head (instructions, tools) sent before. Undefined: nothing known to be cached.
   */
  fresh?: number
  /**
   * What the layout counted by bound, to be counted before `raw`, `estimate` and `fresh` are set (they
   * are 0 and undefined till then): `counts`, the route's thread's counts of its texts, when they came.
   */
  deferred?: DeferredCounts
  counts?: number[]
  /** Sets `raw`, `estimate` and `fresh` from the counts (`OpenAIRoute.settle`). */
  count: (plan: Plan) => void
}

/**
 * One route: one endpoint and model over the official SDK. Each step lays out a bounded, cache-stable
 * context from the session log (context.ts), counts it (tokens.ts) against what the route may hold
 * (route-context.ts), streams one Chat Completion with every host tool offered, and hands back the
 * assembled step. A context-length refusal is learned from and retried once with a window that fits;
 * every other failure becomes `MODEL_UNAVAILABLE` (key scrubbed); a cancel aborts the request at once.
 */
export class OpenAIRoute implements ModelAdapter {
  /** How requests reach the endpoint: the SDK on the host's thread or on its own (config `transport`). */
  readonly transport: ModelTransport
  readonly counter: TokenCounter
  readonly limits: RouteContext
  private readonly windows: EventWindows
  /**
   * Per session: the seq its shown transcript starts at and its task-state notes (context.ts keeps both
   * stable); `undefined`: laid out afresh next step (a refusal, a cut). A session not in it (a restart, or
   * forgotten) has them read back from its log (window-record.ts).
   */
  private readonly starts = new Map<string, { keepFrom: number, notes: StateNote[], raw?: number, tools?: unknown } | undefined>()
  /** The host's tool registry, read once: `ctx.tools` goes through cordis' tracing proxy (~0.1 ms a read). */
  private readonly registry: Context['tools']
  private toolCache?: { defs: unknown[], tools: { type: 'function', function: { name: string, description: string, parameters: JsonSchema } }[], raw: number }
  /** Instructions this route sent with the current tool set: a new session's head an endpoint may have cached. */
  private heads = { tools: undefined as unknown, sent: new Set<string>() }
  private preparing?: Promise<void>
  /** Which window event each laid-out message was made from: token counts are kept with the events (tokens.ts). */
  private readonly origins = new WeakMap<object, SessionEvent>()

  constructor(
    private ctx: Context,
    readonly config: RouteConfig & { apiKey: string },
    private context: ContextConfig,
    private taskState?: TaskStateSource,
    private onContextExceeded?: ContextExceededHandler,
    transport: 'worker' | 'inline' = 'worker',
  ) {
    const tools = ctx.tools
    this.registry = (tools as any)[Symbol.for('cordis.original')] ?? tools
    this.counter = new TokenCounter(config.model)
    this.limits = new RouteContext(context.contextTokens, config.maxOutputTokens)
    // A message longer than the whole budget in characters is cut by the builder anyway.
    this.windows = new EventWindows(ctx, context.maxEvents, context.toolResultChars, (context.contextTokens ?? 32000) * 4)
    const logger = ctx.logger('openai')
    // The SDK's retry notices go to the host log, with the key scrubbed from anything it prints.
    const log = {
      warn: (text: string) => logger.warn('%s', redact(text, config.apiKey)),
      debug: (text: string) => logger.debug('%s', redact(text, config.apiKey)),
    }
    this.transport = transport === 'inline' ? new InlineTransport(config, log) : new WorkerTransport(config, log, { encoding: this.counter.encoding, exact: this.counter.exact })
  }

  /** Ends the route's requests in flight and its thread (the plugin's dispose). */
  close() {
    this.transport.close()
  }

  /** Loads the tokenizer and asks the endpoint its context size (once; neither is fatal). */
  prepare(): Promise<void> {
    this.preparing ??= (async () => {
      if (this.transport instanceof WorkerTransport) this.transport.warm()
      const discovery = this.context.contextTokens !== undefined ? undefined
        : discoverContext({ baseURL: this.config.baseURL, model: this.config.model, apiKey: this.config.apiKey })
      await this.counter.ready().catch((error) => this.ctx.logger('openai').warn('route %s: tokenizer not loaded (%s); counting ≈ 3 characters a token', this.config.route, error))
      const found = await discovery
      if (found) {
        this.limits.discovered = found
        this.ctx.logger('openai').info('route %s: context %d tokens (%s)', this.config.route, found.tokens, found.source)
      }
    })()
    return this.preparing
  }

  /** The route's context as `npm run doctor` prints it. */
  describeContext(): string {
    const size = this.limits.size()
    return `context ${size.promptTokens} prompt tokens (${size.source}); tokens counted ${this.counter.exact ? `exactly (${this.counter.encoding})` : `by estimate (${this.counter.encoding} × ${this.counter.ratio.toFixed(2)} calibrated)`}`
  }

  /** The chat messages of a request (exposed for tests and the benchmark). */
  async messages(request: ModelRequest): Promise<ChatMessage[]> {
    return (await this.plan(request)).body.messages
  }

  /** Every host tool as a function tool, by name (a fixed order: part of the cached prefix); converted again only when the registry changed. */
  tools() {
    return this.toolSet().tools
  }

  private toolSet() {
    const defs = this.registry.list()
    if (this.toolCache && this.toolCache.defs.length === defs.length && this.toolCache.defs.every((def, i) => def === defs[i])) {
      return this.toolCache
    }
    const tools = [...defs].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0).map((tool) => ({
      type: 'function' as const,
      function: { name: tool.name, description: tool.description, parameters: toolParameters(tool.parameters) },
    }))
    // Frozen: the same list on every request until the tools change, its request text made once (body-text.ts).
    this.toolCache = { defs, tools: frozen(tools), raw: this.counter.tools(tools) }
    return this.toolCache
  }

  /** The request of one step: the window laid out to fit what the route may hold. */
  private async plan(request: ModelRequest): Promise<Plan> {
    const session = request.session
    const { events, unread } = await this.windows.latest(session)
    let taskState: unknown
    try {
      taskState = await this.taskState?.(session)
    } catch {
      taskState = undefined
    }
    const toolSet = this.toolSet()
    const { tools, raw: toolTokens } = toolSet
    const limit = this.limits.size().promptTokens
    const known = this.starts.has(session.id) ? this.starts.get(session.id) : readWindowStart(events)
    const previous = this.starts.get(session.id)
    const instructions = instructionsFor(request.role, session.cwd)
    // In raw counts: the room left by the tools, shrunk by the route's calibration and the margin.
    const ratio = this.counter.ratio
    const room = Math.floor(limit / (ratio * SAFETY_MARGIN)) - toolTokens
    const input = { instructions, taskState, events, unread, origins: this.origins, ...(known ? { keepFrom: known.keepFrom, notes: known.notes } : {}) }
    const limits = { contextTokens: Math.max(0, room), toolResultChars: this.context.toolResultChars, taskStateChars: this.context.taskStateChars, lowWater: this.context.lowWater }
    // Where the route's thread counts, a text with no count kept (the new tool result, the new note) is
    // laid out by its bound and counted there once the request is sent: the host's thread spends a byte
    // count instead of BPE on it. When no bound decided anything (the window has room), that layout is
    // the one exact counts make; else the layout is made again, counting here.
    let deferred = this.transport.countsTexts && this.counter.defers ? new DeferredCounts() : undefined
    let layout = layoutMessages(input, limits, (message) => this.counter.message(message, this.origins, deferred))
    if (deferred && !deferred.bounded) deferred = undefined
    else if (deferred && (layout.fitted || !layout.fits)) {
      deferred = undefined
      layout = layoutMessages(input, limits, (message) => this.counter.message(message, this.origins))
    }
    const start: { keepFrom: number, notes: StateNote[], raw?: number, tools?: unknown } = { keepFrom: layout.keepFrom, notes: layout.notes, tools: toolSet }
    this.starts.delete(session.id)
    this.starts.set(session.id, start)
    while (this.starts.size > WINDOWS) this.starts.delete(this.starts.keys().next().value!)
    if (layout.dropped) this.ctx.logger('openai').debug('route %s, session %s: window starts at seq %d now', this.config.route, session.id, layout.keepFrom)
    // Tools before messages: the serialized request, too, starts with what does not change.
    const body: Plan['body'] = {
      model: this.config.model,
      ...(tools.length ? { tools } : {}),
      stream: true as const,
      stream_options: { include_usage: true },
      ...(this.config.temperature !== undefined ? { temperature: this.config.temperature } : {}),
      ...(this.config.maxOutputTokens !== undefined ? { max_tokens: this.config.maxOutputTokens } : {}),
      messages: layout.messages,
    }
    // What a prefix cache may have served: the session's previous request, or (a session's first request,
    // as each review is) the head — instructions and tools — an earlier request of the route sent.
    const previousRaw = previous?.raw !== undefined && previous.tools === toolSet && !layout.dropped ? previous.raw : undefined
    const headSent = this.heads.tools === toolSet && this.heads.sent.has(instructions)
    if (this.heads.tools !== toolSet) this.heads = { tools: toolSet, sent: new Set() }
    this.heads.sent.add(instructions)
    if (this.heads.sent.size > WINDOWS) this.heads.sent.delete(this.heads.sent.values().next().value!)
    const record = windowRecord(known, layout)
    const count = (plan: Plan) => {
      const raw = (plan.deferred ? shownTokens(layout, (message) => this.counter.message(message, this.origins)) : layout.tokens) + (tools.length ? toolTokens : 0)
      plan.raw = start.raw = raw
      plan.estimate = Math.ceil(raw * ratio)
      if (previousRaw !== undefined) plan.fresh = Math.max(0, raw - previousRaw)
      else if (headSent) plan.fresh = Math.max(0, raw - toolTokens - this.counter.message({ role: 'system', content: instructions }))
    }
    const plan: Plan = { body, layout, raw: 0, estimate: 0, limit, count, ...(deferred ? { deferred } : {}), ...(record ? { record } : {}) }
    if (!deferred) count(plan)
    return plan
  }

  /** Sets a deferred plan's counts (once): the route's thread's, else counted here (it failed, or the request ended first). */
  private settle(plan: Plan) {
    const deferred = plan.deferred
    if (!deferred) return
    this.counter.settle(deferred, plan.counts)
    plan.count(plan)
    plan.deferred = undefined
  }

  async step(request: ModelRequest): Promise<AssembledStep> {
    await this.prepare()
    for (let attempt = 0; ; attempt++) {
      const plan = await this.plan(request)
      if (!plan.layout.fits) {
        throw await this.exceeded(request, new TaskwardError('MODEL_CONTEXT_EXCEEDED',
          `The turn's input with the instructions, the tool schemas, the task state${plan.layout.required > plan.layout.fixed ? ` and the newest tool call with its result (cut to ${MIN_RESULT_CHARS} characters)` : ''} alone is ≈${this.counter.calibrated(plan.layout.required + (this.toolCache?.raw ?? 0))} tokens; route "${this.config.route}" holds ${plan.limit} (${this.limits.size().source}). `
          + 'Nothing is lost: send a shorter message, or use a model with a larger context (or raise context.contextTokens), then /task resume.',
          { route: this.config.route, limit: plan.limit, requested: this.counter.calibrated(plan.raw) }))
      }
      // Appended before it is sent, so that a host that restarts lays the next step out alike
      // (window-record.ts): the log orders it before the answer. Not waited for before sending — the
      // session's appends run in order, and one committed outside the step just before (an operator
      // command's reply) would hold the request for its fsync; it is in the log before the step ends.
      // Not the step's business if it fails: only a restart's first request would differ.
      const recorded = plan.record && request.session.append(WINDOW_EVENT, { route: this.config.route, ...plan.record })
        .catch((error) => this.ctx.logger('openai').debug('route %s: the window was not recorded (%s)', this.config.route, error))
      try {
        return await this.send(request, plan)
      } catch (error) {
        if (!(error instanceof TaskwardError) || error.code !== 'MODEL_CONTEXT_EXCEEDED') throw error
        // Learned: the next layout fits the limit the endpoint named (or, named none, three quarters of this request).
        // The endpoint's count of this prompt (what it requested less the completion it reserved), when
        // above the estimate: the estimate undercounts this endpoint, and the retry is sized in its count.
        const counted = (Number(error.details?.requested) || 0) - (Number(error.details?.completion) || 0)
        if (counted > plan.estimate) this.counter.correct(plan.raw, counted)
        const named = Number(error.details?.limit) || Math.floor(plan.estimate * 0.75)
        this.limits.learn(named, 'a context-length refusal', Number(error.details?.completion) || undefined)
        this.starts.set(request.session.id, undefined)
        if (attempt === 0) {
          this.ctx.logger('openai').warn('route %s: the endpoint refused %d tokens (limit %s); retrying the step with a smaller window', this.config.route, plan.estimate, error.details?.limit ?? 'not named')
          continue
        }
        throw await this.exceeded(request, error)
      } finally {
        // Its place in the log is set by the call above (the session runs appends in call order); the
        // wait keeps it inside this step's commit when the step fails, rather than committed alone after it.
        await recorded
      }
    }
  }

  /** Pauses a main session's task with the error's reason (through the handler), then hands the error back. */
  private async exceeded(request: ModelRequest, error: TaskwardError) {
    if (request.role === 'main' && this.onContextExceeded) {
      await this.onContextExceeded(request.session, error).catch((fault) => this.ctx.logger('openai').warn('pausing after MODEL_CONTEXT_EXCEEDED failed: %s', fault))
    }
    return error
  }

  private async send(request: ModelRequest, plan: Plan): Promise<AssembledStep> {
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
    const refused: { body?: string } = {}
    let completed = false
    try {
      const count = plan.deferred && { texts: plan.deferred.texts, onCounts: (counts: number[]) => { plan.counts = counts } }
      const stream = await Promise.race([this.transport.open({ body: plan.body, signal: abort.signal, refused, ...(count ? { count } : {}) }), cancelled])
      lastChunk = performance.now()
      watch(this.config.timeoutMs)
      // An abort (cancel, stall) ends the SDK's stream quietly: the check after the loop tells it from
      // an answer that is complete.
      for await (const chunk of stream) {
        lastChunk = performance.now()
        assembler.push(chunk as StreamChunk)
      }
      if (abort.signal.aborted) throw new APIUserAbortError()
      // The SDK read the body to its end (it returns early only when aborted): nothing is left to close.
      completed = true
      const step = assembler.finish()
      this.settle(plan)
      step.estimatedPromptTokens = plan.estimate
      const report = step.usage && judgePromptReport({
        estimate: plan.estimate, reported: step.usage.promptTokens, cached: step.usage.cachedTokens,
        ...(plan.fresh !== undefined ? { fresh: this.counter.calibrated(plan.fresh) } : {}),
      })
      // No count of what was sent: charged the estimate instead, like no usage.
      if (report === 'implausible') {
        this.ctx.logger('openai').warn('route %s reported %d prompt tokens for a request of ≈%d; the step is charged the estimate', this.config.route, step.usage!.promptTokens, plan.estimate)
        delete step.usage
      }
      if (step.usage) {
        if (report === 'sample') this.counter.observe(plan.raw, step.usage.promptTokens)
        if (report === 'cut') await this.learnCut(request, plan, step.usage.promptTokens)
      } else {
        // An endpoint that ignores `include_usage` (some vLLM and Ollama builds) must not make the token
        // budget silently void: the step is charged the estimate, marked as such.
        const output = (step.text ?? '') + JSON.stringify(step.toolCalls ?? [])
        step.usage = {
          promptTokens: plan.estimate,
          completionTokens: this.counter.calibrated(this.counter.count(step.toolCalls?.length ? output : step.text ?? '')),
          estimated: true,
        }
      }
      if (step.reasoningExcerpt) this.ctx.logger('openai').debug('reasoning excerpt (%s): %s', this.config.route, step.reasoningExcerpt)
      return step
    } catch (error) {
      this.settle(plan)
      if (request.signal.aborted) throw new TaskwardError('MODEL_UNAVAILABLE', 'The model request was cancelled.', { route: this.config.route, cancelled: true })
      throw modelFault(error, this.config, { stalled, body: refused.body, estimate: plan.estimate })
    } finally {
      clearTimeout(timer)
      request.signal.removeEventListener('abort', onCancel)
      // Closes the request on every other way out; a shared reason spares an AbortError (and its stack).
      // After a completed stream it would only wake the SDK's and undici's listeners (an error with a
      // stack, a DOMException, a stream cancel: ~3 % of a step's host CPU) to close what is closed.
      if (!completed && !abort.signal.aborted) abort.abort(STEP_ENDED)
    }
  }

  /**
   * The endpoint cut the prompt silently (Ollama past num_ctx; route-context.ts tells it from a cache
   * hit): a coded warning, and the route's context learned down to what it kept.
   */
  private async learnCut(request: ModelRequest, plan: Plan, reported: number) {
    this.limits.learn(reported, 'a prompt the endpoint cut')
    this.starts.set(request.session.id, undefined)
    const message = `Model route "${this.config.route}" counted ${reported} prompt tokens of the ≈${plan.estimate} sent: the endpoint cut the prompt `
      + `without an error (Ollama does past its num_ctx). The route now sends at most ${this.limits.size().promptTokens} prompt tokens; `
      + 'raise num_ctx (Ollama: the model\'s PARAMETER num_ctx, or OLLAMA_CONTEXT_LENGTH) and set context.contextTokens to match.'
    this.ctx.logger('openai').warn('MODEL_CONTEXT_TRUNCATED: %s', message)
    await request.session.append('model/warning', { code: 'MODEL_CONTEXT_TRUNCATED', route: this.config.route, message, reported, sent: plan.estimate })
      .catch(() => {})
  }
}

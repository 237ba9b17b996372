import type { ModelStep, ModelToolCall } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'

/*
 * Assembles one streamed Chat Completion (the chunks of `stream: true`) into a model step. Pure:
 * chunks in, a step out; text deltas are handed to `onText` as they arrive.
 */

/** The parts of a `chat.completion.chunk` this reads (the SDK's type, loosely: endpoints differ). */
export interface StreamChunk {
  choices?: {
    index?: number
    delta?: {
      content?: string | null
      /** DeepSeek and some vLLM models stream their reasoning here. */
      reasoning_content?: string | null
      tool_calls?: { index: number, id?: string, function?: { name?: string, arguments?: string } }[]
    }
    finish_reason?: string | null
  }[]
  usage?: {
    prompt_tokens?: number
    completion_tokens?: number
    /** OpenAI, vLLM (with prefix caching and usage stats): the prompt tokens served from cache. */
    prompt_tokens_details?: { cached_tokens?: number | null } | null
    /** DeepSeek: the prompt tokens that hit and missed its context cache. */
    prompt_cache_hit_tokens?: number
    prompt_cache_miss_tokens?: number
  } | null
}

export interface AssembledStep extends ModelStep {
  finishReason?: string
  /** At most `reasoningChars` characters of the streamed reasoning (never recorded whole). */
  reasoningExcerpt?: string
  /** The adapter's estimate of the request's prompt tokens (set by adapter.ts; for the benchmark and logs, not recorded). */
  estimatedPromptTokens?: number
}

export class StepAssembler {
  private text = ''
  private reasoning = ''
  private reasoningSeen = 0
  /** The calls in order of appearance; `index` is the endpoint's number for the call. */
  private calls: { index: number, id?: string, name: string, args: string }[] = []
  /** The call each endpoint index currently continues. */
  private byIndex = new Map<number, { index: number, id?: string, name: string, args: string }>()
  private usage?: ModelStep['usage']
  private finishReason?: string

  private size = 0

  constructor(private options: { onText?: (delta: string) => void, reasoningChars: number, maxStepChars?: number }) {}

  /** Count streamed characters; past `maxStepChars` the step is refused (an endpoint that never stops). */
  private grow(length: number) {
    this.size += length
    const limit = this.options.maxStepChars
    if (limit !== undefined && this.size > limit) {
      throw new TaskwardError('MODEL_UNAVAILABLE',
        `The model's answer passed ${limit} characters (maxStepChars) in one step; it was stopped. Ask for less, or raise context.maxStepChars.`,
        { reason: 'too-large', limit })
    }
  }

  push(chunk: StreamChunk) {
    if (chunk.usage && (chunk.usage.prompt_tokens !== undefined || chunk.usage.completion_tokens !== undefined)) {
      const prompt = chunk.usage.prompt_tokens ?? 0
      const completion = chunk.usage.completion_tokens ?? 0
      // The endpoint's word goes into the budget and the calibration: a count that is not a whole,
      // non-negative, safe number (a negative one would refund the budget) is no count; the step is
      // then charged the estimate (adapter.ts), as when no usage came.
      if (isCount(prompt) && isCount(completion)) {
        this.usage = { promptTokens: prompt, completionTokens: completion }
        const cached = cachedTokens(chunk.usage)
        if (cached !== undefined) this.usage.cachedTokens = cached
      } else {
        this.usage = undefined
      }
    }
    // One completion is asked for (n = 1): other choices, if an endpoint sends any, are ignored.
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0)
    if (!choice) return
    const delta = choice.delta ?? {}
    if (typeof delta.content === 'string' && delta.content) {
      this.grow(delta.content.length)
      this.text += delta.content
      this.options.onText?.(delta.content)
    }
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content) {
      this.reasoningSeen += delta.reasoning_content.length
      const room = this.options.reasoningChars - this.reasoning.length
      if (room > 0) this.reasoning += delta.reasoning_content.slice(0, room)
    }
    for (const part of delta.tool_calls ?? []) {
      const index = Number.isInteger(part.index) ? part.index : 0
      const id = part.id ? part.id.slice(0, 200) : undefined
      let call = this.byIndex.get(index)
      // A different call id at an index in use starts a new call: Ollama numbers every call 0 (and
      // older builds and some proxies send no index), which would otherwise run calls together.
      if (!call || (id && call.id && id !== call.id)) {
        call = { index, name: '', args: '' }
        this.calls.push(call)
        this.byIndex.set(index, call)
      }
      this.grow((part.function?.name?.length ?? 0) + (part.function?.arguments?.length ?? 0))
      if (id) call.id = id
      if (part.function?.name) call.name += part.function.name
      if (part.function?.arguments) call.args += part.function.arguments
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason
  }

  finish(): AssembledStep {
    // By the endpoint's index; calls that share one keep their order of arrival (a stable sort).
    const toolCalls = [...this.calls].sort((a, b) => a.index - b.index).map((call) => parseCall(call))
    const step: AssembledStep = {}
    if (this.text) step.text = this.text
    if (toolCalls.length) step.toolCalls = toolCalls
    if (this.usage) step.usage = this.usage
    if (this.finishReason) step.finishReason = this.finishReason
    if (this.reasoning) {
      step.reasoningExcerpt = this.reasoningSeen > this.reasoning.length
        ? `${this.reasoning}…[${this.reasoningSeen - this.reasoning.length} more characters not kept]` : this.reasoning
    }
    return step
  }
}

/** A token count as reported: a whole number, 0 or more, exact as a double. */
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0

/** The cached share of a step's prompt tokens, in whichever field the endpoint reports it (never more than the prompt). */
export function cachedTokens(usage: NonNullable<StreamChunk['usage']>): number | undefined {
  const raw = usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens
  const value = Number(raw)
  if (raw === undefined || raw === null || !Number.isFinite(value) || value < 0) return undefined
  return Math.min(Math.floor(value), usage.prompt_tokens ?? Math.floor(value))
}

/** Arguments that are not a JSON object become `invalidArgs`: the host records the call and refuses it. */
export function parseCall(call: { id?: string, name: string, args: string }): ModelToolCall {
  // A name is at most 200 characters: longer is no tool's name, and it is recorded as sent.
  const base: ModelToolCall = { name: call.name.slice(0, 200) || '(unnamed)', ...(call.id ? { id: call.id } : {}) }
  const raw = call.args.trim()
  if (!raw) return { ...base, args: {} }
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (error) {
    return { ...base, invalidArgs: `the arguments are not valid JSON (${(error as Error).message}); send one JSON object` }
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ...base, invalidArgs: 'the arguments must be one JSON object' }
  }
  return { ...base, args: parsed as Record<string, any> }
}

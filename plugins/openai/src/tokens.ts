
/*
 * How many tokens a request will be, before it is sent.
 *
 * OpenAI's own models are counted with their real encoding (gpt-tokenizer: MIT, no dependencies, the
 * encodings ship in the package, nothing is downloaded at run time; 7–20× faster than js-tiktoken on
 * English and CJK, which matters since every step counts what is new in its request): `o200k_base` for gpt-4o, gpt-4.1, gpt-5 and the o-series,
 * `cl100k_base` for gpt-4 and gpt-3.5. No well-kept JS library carries the tokenizers of DeepSeek, Qwen,
 * Llama and the other models vLLM and Ollama serve, so for them the count is `o200k_base` (a modern BPE
 * close to theirs on English and code) with a floor of one token per CJK character, times a ratio
 * calibrated per route from the `usage` the endpoint reports (reported / estimated over recent steps).
 * Every estimate of a whole request carries a safety margin on top.
 */

import { CountCache, type CountCacheLimits } from './count-cache'
import { isFrozenWhole } from './body-text'

export type EncodingName = 'o200k_base' | 'cl100k_base'

/** The real encoding of an OpenAI model name (with or without a provider prefix), else undefined. */
export function openAIEncoding(model: string): EncodingName | undefined {
  const name = model.toLowerCase().replace(/^(openai\/|azure\/)/, '')
  if (/^(gpt-4o|gpt-4\.[1-9]|gpt-5|o[1-9](-|$)|chatgpt-4o|gpt-oss)/.test(name)) return 'o200k_base'
  if (/^(gpt-4|gpt-3\.5)/.test(name)) return 'cl100k_base'
  return undefined
}

/** Counts the tokens of a text (never refusing special-token text: it is content, counted as such). */
export type Encoder = (text: string) => number

const encodings = new Map<EncodingName, Promise<Encoder>>()
const PLAIN = { disallowedSpecial: new Set<string>() }

/** The encoder (its ranks are parsed once per process, ~0.9 s for o200k_base, on the first step that needs it). */
export function loadEncoding(name: EncodingName): Promise<Encoder> {
  let loading = encodings.get(name)
  if (!loading) {
    loading = (async () => {
      const { countTokens } = name === 'o200k_base' ? await import('gpt-tokenizer/encoding/o200k_base') : await import('gpt-tokenizer/encoding/cl100k_base')
      return (text: string) => countTokens(text, PLAIN)
    })()
    encodings.set(name, loading)
  }
  return loading
}

/** CJK ideographs, kana and hangul: the scripts a characters-per-token estimate undercounts most. */
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]/g

export const countCjk = (text: string) => text.match(CJK)?.length ?? 0

/** Tokens the chat format adds around each message (role markers), as OpenAI documents for its models. */
export const MESSAGE_OVERHEAD = 4
/** Tokens a function tool adds beyond its JSON (the template's wrapping). */
export const TOOL_OVERHEAD = 8

/** Applied to every estimate of a whole request: what a window must leave free of the limit. */
export const SAFETY_MARGIN = 1.1

/**
 * How one text is counted with a loaded encoder, as source: this thread and a route's own thread
 * (worker-transport.ts, which counts what a layout left to it) run this same code, so their counts
 * cannot differ. `exact` false (not the model's own encoding): never less than one token a CJK character.
 *
 * A long run the pre-tokenizer would keep whole — letters (a model writing 100 KB of `x`, unpunctuated
 * CJK, letters with combining marks) or punctuation, spaces, emoji — is encoded in pieces of 64: BPE
 * over one run is quadratic (100,000 letters take 16 s whole, 50,000 `!` 1.5 s), in pieces linear, and
 * a piece boundary costs at most one token. Special-token text (`<|endoftext|>`) is counted as plain
 * text, never refused: it is content.
 */
export const TEXT_TOKENS_SOURCE = String.raw`(() => {
  const RUN = 64
  const longRun = /[\p{L}\p{M}]{64,}|[^\p{L}\p{M}\p{N}]{64,}/gu
  const cjk = ${CJK}
  return (encoder, text, exact) => {
    let tokens = 0
    let at = 0
    for (const run of text.matchAll(longRun)) {
      if (run.index > at) tokens += encoder(text.slice(at, run.index))
      for (let i = 0; i < run[0].length; i += RUN) tokens += encoder(run[0].slice(i, i + RUN))
      at = run.index + run[0].length
    }
    if (at < text.length) tokens += encoder(at ? text.slice(at) : text)
    if (exact) return tokens
    const found = text.match(cjk)
    return Math.max(tokens, found ? found.length : 0)
  }
})()`

/** Tokens of `text` with a loaded encoder (TEXT_TOKENS_SOURCE). */
export const textTokens: (encoder: Encoder, text: string, exact: boolean) => number = new Function(`return ${TEXT_TOKENS_SOURCE}`)()

/**
 * Tokens `text` can take at most, whatever the encoding: its UTF-8 bytes (a byte-level BPE token is at
 * least one byte; a CJK character, counted one token at least, is three). Cheap: what a layout counts
 * with where the exact count can wait (DeferredCounts).
 */
export const tokenBound = (text: string) => Buffer.byteLength(text, 'utf8')

/**
 * The texts a layout counted by their bound (`tokenBound`) because no count of them was kept, to be
 * counted after the request is sent (off the host's thread where the transport can: worker-transport.ts),
 * and what to keep of them then (`TokenCounter.settle`).
 */
export class DeferredCounts {
  /** Each text once, in the order first met. */
  readonly texts: string[] = []
  private readonly seen = new Set<string>()
  /** Counts given out as bounds (a text met twice, twice). */
  bounded = 0
  /** The events whose shown parts had a text among them: their counts are kept with them once counted. */
  readonly events: { event: object, chars: number, texts: string[] }[] = []

  add(text: string) {
    this.bounded++
    if (this.seen.has(text)) return
    this.seen.add(text)
    this.texts.push(text)
  }
}

/** The parts of a chat message that are counted. */
export interface CountedMessage {
  role: string
  content?: string | null
  tool_calls?: { function: { name: string, arguments: string } }[]
}

/**
 * Token counts for one route. `count` is the raw count (exact for OpenAI models); `calibrated` applies
 * the route's ratio. Counts are cached (count-cache.ts): the transcript is append-only, so each step
 * counts only what is new.
 */
export class TokenCounter {
  readonly encoding: EncodingName
  /** True when `encoding` is the model's own. */
  readonly exact: boolean
  private encoder?: Encoder
  readonly cache: CountCache
  /** Recent steps: [estimated raw, reported]. */
  private samples: [number, number][] = []

  constructor(readonly model: string, private window = 8, cacheLimits?: CountCacheLimits) {
    this.cache = new CountCache(cacheLimits)
    const own = openAIEncoding(model)
    this.encoding = own ?? 'o200k_base'
    this.exact = !!own
  }

  /** Loads the encoder; until then `count` falls back to ≈ 3 characters a token (never less than one a CJK character). */
  async ready() {
    this.encoder ??= await loadEncoding(this.encoding)
    return this
  }

  /** Whether counts can be deferred (`DeferredCounts`): only once the encoder is loaded (before, counts are estimates). */
  get defers() {
    return !!this.encoder
  }

  /**
   * Raw tokens of `text`. With `deferred`, a text with no count kept is not counted: its bound is
   * returned and it is left to `deferred`.
   */
  count(text: string, deferred?: DeferredCounts): number {
    if (!text) return 0
    const cached = this.cache.get(text)
    if (cached !== undefined) return cached
    if (deferred && this.encoder) {
      deferred.add(text)
      return tokenBound(text)
    }
    // Until the encoder is loaded the count is an estimate (≈ 3 characters a token, one a CJK character
    // at least): not kept, so the real count replaces it.
    if (!this.encoder) return Math.max(Math.ceil(text.length / 3), countCjk(text))
    const tokens = textTokens(this.encoder, text, this.exact)
    this.cache.set(text, tokens)
    return tokens
  }

  /**
   * Raw tokens of one chat message, its framing included. With `origins` (see `eventsToGroups`), the
   * count of what a message or call shows of its event is kept with that event: a window's events
   * are the same objects from step to step, so an event is counted once for as long as a window holds
   * it, whatever the cache keeps, and the memory goes with the event. With `deferred`, see `count`.
   */
  message(message: CountedMessage, origins?: WeakMap<object, unknown>, deferred?: DeferredCounts): number {
    // A message made whole and frozen that is no event's (the instructions, a task-state note: laid out on
    // every step as the same object) keeps its count with it, as an event's does: no text lookup.
    const unchanging = !origins?.has(message) && isFrozenWhole(message)
    if (unchanging) {
      const kept = this.byMessage.get(message)
      if (kept !== undefined) return kept
    }
    const bounded = deferred?.bounded ?? 0
    const content = message.content ?? ''
    let tokens = MESSAGE_OVERHEAD + this.ofEvent(message, origins, content, [content], deferred)
    for (const call of message.tool_calls ?? []) {
      tokens += this.ofEvent(call, origins, call.function.arguments, [call.function.name, call.function.arguments], deferred) + 3
    }
    // Not an estimate, nor a bound.
    if (unchanging && this.encoder && (deferred?.bounded ?? 0) === bounded) this.byMessage.set(message, tokens)
    return tokens
  }

  /** Counts of unchanging messages (see `message`). */
  private readonly byMessage = new WeakMap<object, number>()

  /** Counts by event (see `message`); `shown` guards against an event shown otherwise since (its length must match). */
  private readonly byEvent = new WeakMap<object, { chars: number, tokens: number }>()

  private ofEvent(piece: object, origins: WeakMap<object, unknown> | undefined, shown: string, texts: string[], deferred?: DeferredCounts): number {
    const event = origins?.get(piece) as object | undefined
    const kept = event && this.byEvent.get(event)
    if (kept && kept.chars === shown.length) return kept.tokens
    const bounded = deferred?.bounded ?? 0
    let tokens = 0
    for (const text of texts) tokens += this.count(text, deferred)
    // An estimate (encoder not loaded yet) is not kept; a bound is kept once counted (`settle`).
    if (!event || !this.encoder) return tokens
    if (deferred && deferred.bounded > bounded) deferred.events.push({ event, chars: shown.length, texts })
    else this.byEvent.set(event, { chars: shown.length, tokens })
    return tokens
  }

  /**
   * Keeps the counts of what `deferred` left (`counts`, in its `texts`' order, from the route's thread;
   * counted here when missing or not one a text) and returns a count of any text that uses them first.
   */
  settle(deferred: DeferredCounts, counts?: readonly number[]): (text: string) => number {
    const usable = counts?.length === deferred.texts.length && counts.every((tokens) => Number.isInteger(tokens) && tokens >= 0)
    const known = new Map<string, number>()
    for (const [index, text] of deferred.texts.entries()) {
      const tokens = usable ? counts[index] : textTokens(this.encoder!, text, this.exact)
      known.set(text, tokens)
      this.cache.set(text, tokens)
    }
    const count = (text: string) => known.get(text) ?? this.count(text)
    for (const { event, chars, texts } of deferred.events) {
      this.byEvent.set(event, { chars, tokens: texts.reduce((sum, text) => sum + count(text), 0) })
    }
    return count
  }

  /** Raw tokens of the tool schemas as offered. */
  tools(tools: readonly unknown[]): number {
    return tools.reduce<number>((sum, tool) => sum + TOOL_OVERHEAD + this.count(JSON.stringify(tool)), 0)
  }

  /** The route's reported / estimated ratio over recent steps (1 until the endpoint reported usage). */
  get ratio(): number {
    if (!this.samples.length) return 1
    const estimated = this.samples.reduce((sum, [e]) => sum + e, 0)
    const reported = this.samples.reduce((sum, [, r]) => sum + r, 0)
    // Bounded: one odd report (a proxy, a cache quirk) cannot make the estimate absurd.
    return Math.min(this.exact ? 1.5 : 4, Math.max(this.exact ? 0.8 : 0.5, reported / estimated))
  }

  /** `raw` tokens as this route's endpoint is expected to count them. */
  calibrated(raw: number): number {
    return Math.ceil(raw * this.ratio)
  }

  /**
   * The endpoint named its count of a request it refused, above the estimate: the recent samples were
   * wrong for what is sent now (averaged with them, the retry would be resent nearly alike). It alone
   * calibrates until reported usage follows; bounded like any sample.
   */
  correct(raw: number, counted: number) {
    if (!(raw > 0 && counted > 0 && Number.isFinite(counted))) return
    this.samples = [[raw, counted]]
  }

  /** Learns from a step: `raw` estimated before sending, `reported` the endpoint's prompt_tokens. */
  observe(raw: number, reported: number) {
    if (!(raw > 0 && reported > 0)) return
    this.samples.push([raw, reported])
    if (this.samples.length > this.window) this.samples.shift()
  }
}

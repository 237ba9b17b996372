
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

/** Characters in one run past which the run is encoded in pieces (BPE time grows with the square of a run). */
const RUN = 64
/** What the encodings' pre-tokenizers keep as one piece: letters with their marks, or anything but letters and digits. */
const LONG_RUN = new RegExp(`[\\p{L}\\p{M}]{${RUN},}|[^\\p{L}\\p{M}\\p{N}]{${RUN},}`, 'gu')

/**
 * Tokens of `text`. A long run the pre-tokenizer would keep whole — letters (a model writing 100 KB of
 * `x`, unpunctuated CJK, letters with combining marks) or punctuation, spaces, emoji — is encoded in
 * pieces of 64: BPE over one run is quadratic (100,000 letters take 16 s whole, 50,000 `!` 1.5 s), in
 * pieces linear, and a piece boundary costs at most one token. Special-token text (`<|endoftext|>`) is counted
 * as plain text, never refused: it is content.
 */
export function encodedLength(encoder: Encoder, text: string): number {
  let tokens = 0
  let at = 0
  for (const run of text.matchAll(LONG_RUN)) {
    if (run.index > at) tokens += encoder(text.slice(at, run.index))
    for (let i = 0; i < run[0].length; i += RUN) tokens += encoder(run[0].slice(i, i + RUN))
    at = run.index + run[0].length
  }
  if (at < text.length) tokens += encoder(at ? text.slice(at) : text)
  return tokens
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

  /** Raw tokens of `text`. */
  count(text: string): number {
    if (!text) return 0
    const cached = this.cache.get(text)
    if (cached !== undefined) return cached
    let tokens = this.encoder ? encodedLength(this.encoder, text) : Math.ceil(text.length / 3)
    if (!this.exact || !this.encoder) tokens = Math.max(tokens, countCjk(text))
    // Until the encoder is loaded the count is an estimate: not kept, so the real count replaces it.
    if (this.encoder) this.cache.set(text, tokens)
    return tokens
  }

  /**
   * Raw tokens of one chat message, its framing included. With `origins` (see `eventsToGroups`), the
   * count of what a message or call shows of its event is kept with that event: a window's events
   * are the same objects from step to step, so an event is counted once for as long as a window holds
   * it, whatever the cache keeps, and the memory goes with the event.
   */
  message(message: CountedMessage, origins?: WeakMap<object, unknown>): number {
    let tokens = MESSAGE_OVERHEAD + this.ofEvent(message, origins, message.content ?? '', () => this.count(message.content ?? ''))
    for (const call of message.tool_calls ?? []) {
      tokens += this.ofEvent(call, origins, call.function.arguments, () => this.count(call.function.name) + this.count(call.function.arguments)) + 3
    }
    return tokens
  }

  /** Counts by event (see `message`); `shown` guards against an event shown otherwise since (its length must match). */
  private readonly byEvent = new WeakMap<object, { chars: number, tokens: number }>()

  private ofEvent(piece: object, origins: WeakMap<object, unknown> | undefined, shown: string, count: () => number): number {
    const event = origins?.get(piece) as object | undefined
    const kept = event && this.byEvent.get(event)
    if (kept && kept.chars === shown.length) return kept.tokens
    const tokens = count()
    // An estimate (encoder not loaded yet) is not kept.
    if (event && this.encoder) this.byEvent.set(event, { chars: shown.length, tokens })
    return tokens
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

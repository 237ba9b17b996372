import type { DiscoveredContext } from './discovery'

/*
 * How many tokens one request of a route may be: what is configured, else what the endpoint said it
 * serves, and never more than what it was seen to hold (a context-length refusal's limit, or the prompt
 * an endpoint cut silently). State of one route, kept in memory; pure otherwise.
 */

/** The smallest context an endpoint is believed to serve: below, no model's instructions and tools fit. */
export const MIN_CONTEXT = 1024

/** Used when nothing is configured, discovered or learned. */
export const DEFAULT_CONTEXT_TOKENS = 24000

export interface ContextSize {
  /** Tokens the prompt (messages and tools) may take, before the safety margin. */
  promptTokens: number
  /** Where the number comes from, for people (doctor, logs, errors). */
  source: string
}

export class RouteContext {
  discovered?: DiscoveredContext
  /** The endpoint's whole context (prompt + completion), as learned from what it refused or cut. */
  learned?: { tokens: number, source: string }

  constructor(private configured: number | undefined, private maxOutputTokens: number | undefined) {}

  /** What the endpoint was seen to reserve for a completion when none is asked for (its default max_tokens). */
  completion?: number

  /** What a window of a whole context of `tokens` leaves the prompt: the completion needs room too. */
  private prompt(tokens: number) {
    const reserve = this.maxOutputTokens ?? Math.max(this.completion ?? 0, Math.min(4096, Math.floor(tokens / 4)))
    return Math.max(256, tokens - reserve)
  }

  size(): ContextSize {
    let size: ContextSize = this.configured !== undefined
      ? { promptTokens: this.configured, source: 'context.contextTokens' }
      : this.discovered ? { promptTokens: this.prompt(this.discovered.tokens), source: `${this.discovered.tokens} discovered (${this.discovered.source})` }
        : { promptTokens: DEFAULT_CONTEXT_TOKENS, source: 'the default' }
    if (this.learned && this.prompt(this.learned.tokens) < size.promptTokens) {
      size = { promptTokens: this.prompt(this.learned.tokens), source: `${this.learned.tokens} learned (${this.learned.source})` }
    }
    return size
  }

  /**
   * The endpoint showed it holds at most `tokens` (and, when named, reserves `completion` of them for the
   * answer); only ever lowers the prompt's room.
   */
  learn(tokens: number, source: string, completion?: number): boolean {
    if (completion && Number.isSafeInteger(completion) && completion < tokens) this.completion = Math.max(this.completion ?? 0, completion)
    // Below MIN_CONTEXT no turn fits: such a claim (a hostile or broken refusal) would refuse every later
    // step of the route before it is sent, until a restart. Not learned; the step is retried as it was.
    if (!(Number.isSafeInteger(tokens) && tokens >= MIN_CONTEXT)) return false
    if (this.learned && this.learned.tokens <= tokens) return false
    this.learned = { tokens, source }
    return true
  }
}

/**
 * Whether a step's reported prompt is so far below what was sent that the endpoint cut it (Ollama cuts a
 * prompt longer than num_ctx from the front, silently, and reports what it kept). `sent`: the calibrated
 * estimate of the request. Below 60 % of it: an estimate is not that far off, even uncalibrated on CJK.
 * A report under 1,024 tokens is not taken for a cut: no model is served with so small a context, and
 * Ollama builds that count only the uncached part of a prompt report a cache hit that small.
 */
export function silentlyCut(sent: number, reported: number): boolean {
  return reported >= 1024 && lowReport(sent, reported)
}

/** A reported prompt below 60 % of the estimate sent: a cut, or a count of the uncached part only. */
export function lowReport(sent: number, reported: number): boolean {
  return reported < sent * 0.6
}

/** Reported / estimated prompt tokens past which a report is no count of the request (tokens.ts bounds the calibration alike). */
export const MAX_REPORT_RATIO = 4

/**
 * What a step's reported prompt count says, against the calibrated `estimate` of what was sent:
 *   implausible  past 4× the estimate (+1,024): no count of the request (a proxy's total, a hostile endpoint);
 *   sample       a count to calibrate the estimate by;
 *   cache-hit    far below, and within 1.5× of `fresh` (the calibrated tokens this request added to what
 *                the route sent before and a prefix cache may hold), with no cached field reported:
 *                an endpoint counting only the uncached part (Ollama builds whose prompt_eval_count
 *                leaves the KV-cache hit out). Taken for a cut, it would learn the context down to it;
 *   cut          far below: the endpoint cut the prompt silently (`silentlyCut`);
 *   low          far below but too small to tell: neither a sample nor a cut.
 */
export function judgePromptReport(report: { estimate: number, reported: number, cached?: number, fresh?: number }): 'implausible' | 'sample' | 'cache-hit' | 'cut' | 'low' {
  const { estimate, reported, cached, fresh } = report
  if (reported > estimate * MAX_REPORT_RATIO + 1024) return 'implausible'
  if (!lowReport(estimate, reported)) return 'sample'
  if (cached === undefined && fresh !== undefined && reported <= fresh * 1.5 + 64) return 'cache-hit'
  return silentlyCut(estimate, reported) ? 'cut' : 'low'
}

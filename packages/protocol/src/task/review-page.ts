import { cutIndex } from '../text'
import type { SessionEvent } from '../events'

/*
 * What a reviewer reads of the main session (`review_read_log`): the session as the model lived it —
 * user and assistant messages, tool calls with their whole arguments, tool results — and nothing else.
 * Streaming fragments (DSH logs every reasoning and argument delta as `assistant/chunk`), usage
 * counters, turn markers and Taskward's own records are skipped and never count against `limit`, so
 * the same review gets the same page on both hosts. A page stays under a byte budget (DSH spills a
 * tool result over 50 KB to a file the reviewer could not open); a long text in it is cut with a
 * marker naming the call that reads on. Pure: the caller feeds the events it read, in seq order.
 */

/** Most entries one page holds (the reviewer's `limit` is clamped to it). */
export const REVIEW_PAGE_LIMIT = 200
/** Most UTF-8 bytes of a page rendered as indented JSON (DSH spills results over 51,200 bytes). */
export const REVIEW_PAGE_MAX_BYTES = 40_000
/** Most characters of one entry's long field (text, arguments or result) before it is cut. */
export const REVIEW_ENTRY_MAX_CHARS = 8_000

/** The event types a review page holds; everything else in the log is skipped. */
export const REVIEW_ENTRY_TYPES: readonly string[] = ['user/message', 'assistant/message', 'tool/call', 'tool/result']

/** Where a long field was cut, and the call that reads on. */
export interface ReviewCut {
  /** The cut field: `text`, `args`, `result` or `error` (its message). */
  field: 'text' | 'args' | 'result' | 'error'
  /** First character shown (of the field's text; an object's text is its JSON). */
  offset: number
  /** Characters shown. */
  shown: number
  /** The field's whole length in characters. */
  total: number
  /** The arguments of the `review_read_log` call that shows the next characters (absent at the end). */
  next?: { from: number, limit: 1, offset: number }
}

/** One entry of a review page. A cut field holds a string (an object's JSON text, cut) and `cut` says where. */
export type ReviewEntry =
  | { seq: number, type: 'user/message' | 'assistant/message', text: string, cut?: ReviewCut }
  | { seq: number, type: 'tool/call', callId?: string, name?: string, args: unknown, cut?: ReviewCut }
  | { seq: number, type: 'tool/result', callId?: string, name?: string, result?: unknown, error?: { code: string, message: string }, cut?: ReviewCut }

export interface ReviewPage {
  events: ReviewEntry[]
  /** Events read and left out (fragments, usage, turn markers, records). */
  skipped: number
  /** Where the next page starts, while events up to the cutoff remain. */
  next?: number
}

export interface ReviewPageOptions {
  from: number
  /** Entries wanted (1 … REVIEW_PAGE_LIMIT). */
  limit: number
  /** The last seq the reviewer may read. */
  cutoffSeq: number
  /** Read one event (`from`) only, its long field from this character on. */
  offset?: number
  maxBytes?: number
  maxChars?: number
}

/** UTF-8 length of a string (no encoder: protocol stays free of host APIs). */
export function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff) { bytes += 4; i++ } else bytes += 3
  }
  return bytes
}

/** Bytes an entry adds to a page rendered with `JSON.stringify(page, null, 2)` (it sits two levels deep). */
function renderedBytes(entry: ReviewEntry): number {
  const text = JSON.stringify(entry, null, 2)
  let lines = 1
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lines++
  return utf8Length(text) + lines * 4 + 2
}

/** The page's own bytes without entries: its keys, a `next`, the caller's `sessionId`/`cutoffSeq` (generous). */
const PAGE_OVERHEAD = 400

const asText = (value: unknown) => typeof value === 'string' ? value : JSON.stringify(value ?? null) ?? 'null'

/** `value` shown from `offset`, at most `max` characters; a cut adds a marker saying how to read on. */
function cutField(seq: number, field: ReviewCut['field'], value: unknown, offset: number, max: number): { value: unknown, cut?: ReviewCut } {
  const text = asText(value)
  if (offset === 0 && text.length <= max && typeof value !== 'string') return { value }
  if (offset === 0 && text.length <= max) return { value: text }
  const start = Math.min(offset, text.length)
  // Never split a surrogate pair.
  const end = Math.max(start, cutIndex(text, Math.min(text.length, start + max)))
  const cut: ReviewCut = { field, offset: start, shown: end - start, total: text.length }
  if (end < text.length) cut.next = { from: seq, limit: 1, offset: end }
  const marker = end < text.length
    ? `\n[… cut by Taskward: characters ${start}–${end} of ${text.length} shown; read on with review_read_log ${JSON.stringify(cut.next)}]`
    : `\n[… cut by Taskward: characters ${start}–${end} of ${text.length} shown; this is the end]`
  return { value: text.slice(start, end) + marker, cut }
}

/** One event as a review entry, or undefined when pages leave it out. */
export function reviewEntry(event: SessionEvent, options: { offset?: number, maxChars?: number } = {}): ReviewEntry | undefined {
  if (!REVIEW_ENTRY_TYPES.includes(event.type)) return
  const data = (event.data ?? {}) as Record<string, any>
  const offset = options.offset ?? 0
  const max = Math.max(1, options.maxChars ?? REVIEW_ENTRY_MAX_CHARS)
  const head = (extra: Record<string, unknown>) => ({
    seq: event.seq,
    type: event.type,
    ...(typeof data.callId === 'string' ? { callId: data.callId } : {}),
    ...(typeof data.name === 'string' ? { name: data.name } : {}),
    ...extra,
  })
  switch (event.type) {
    case 'user/message':
    case 'assistant/message': {
      const text = typeof data.text === 'string' ? data.text : ''
      // An assistant message without text (a step of tool calls only) says nothing: its calls follow.
      if (!text && offset === 0) return
      const { value, cut } = cutField(event.seq, 'text', text, offset, max)
      return { seq: event.seq, type: event.type, text: value as string, ...(cut ? { cut } : {}) }
    }
    case 'tool/call': {
      const { value, cut } = cutField(event.seq, 'args', data.args ?? {}, offset, max)
      return head({ args: value, ...(cut ? { cut } : {}) }) as ReviewEntry
    }
    case 'tool/result': {
      if (data.error && typeof data.error === 'object') {
        const { value, cut } = cutField(event.seq, 'error', String(data.error.message ?? ''), offset, max)
        return head({ error: { code: String(data.error.code ?? 'TOOL_FAILED'), message: value as string }, ...(cut ? { cut } : {}) }) as ReviewEntry
      }
      const { value, cut } = cutField(event.seq, 'result', data.result ?? null, offset, max)
      return head({ result: value, ...(cut ? { cut } : {}) }) as ReviewEntry
    }
  }
}

/**
 * Builds one review page from the events a caller reads in seq order: `add` each (it answers false
 * once the page is full or the cutoff passed: stop reading), then `page()`.
 */
export class ReviewPageBuilder {
  private readonly entries: ReviewEntry[] = []
  private skipped = 0
  private bytes = PAGE_OVERHEAD
  private stoppedAt?: number
  private lastSeen = -1
  private readonly limit: number
  private readonly maxBytes: number
  private readonly maxChars: number

  constructor(private readonly options: ReviewPageOptions) {
    this.limit = options.offset !== undefined ? 1 : Math.min(Math.max(1, options.limit), REVIEW_PAGE_LIMIT)
    this.maxBytes = options.maxBytes ?? REVIEW_PAGE_MAX_BYTES
    this.maxChars = options.maxChars ?? REVIEW_ENTRY_MAX_CHARS
  }

  /** Whether events from `seq` on are still wanted. */
  wants(seq: number): boolean {
    if (this.stoppedAt !== undefined || seq > this.options.cutoffSeq) return false
    if (this.options.offset !== undefined) return seq === this.options.from && this.lastSeen < seq
    return this.entries.length < this.limit
  }

  add(event: SessionEvent): boolean {
    if (event.seq < this.options.from || event.seq <= this.lastSeen) return this.wants(event.seq + 1)
    if (!this.wants(event.seq)) return false
    this.lastSeen = event.seq
    let entry = reviewEntry(event, { offset: this.options.offset, maxChars: this.maxChars })
    if (!entry) {
      this.skipped++
      return this.wants(event.seq + 1)
    }
    let size = renderedBytes(entry)
    if (this.bytes + size > this.maxBytes) {
      if (this.entries.length) {
        // Not this page: the next one starts with it.
        this.stoppedAt = event.seq
        return false
      }
      // A page holds at least one entry: cut it shorter until it fits.
      for (let chars = this.maxChars; this.bytes + size > this.maxBytes && chars > 16;) {
        chars = Math.floor(chars / 2)
        entry = reviewEntry(event, { offset: this.options.offset, maxChars: chars })!
        size = renderedBytes(entry)
      }
    }
    this.entries.push(entry)
    this.bytes += size
    return this.wants(event.seq + 1)
  }

  page(): ReviewPage {
    const next = this.stoppedAt ?? (this.options.offset === undefined ? this.lastSeen + 1 : undefined)
    return {
      events: this.entries,
      skipped: this.skipped,
      ...(next !== undefined && next > this.options.from && next <= this.options.cutoffSeq ? { next } : {}),
    }
  }
}

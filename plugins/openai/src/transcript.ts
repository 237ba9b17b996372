import { cutIndex, type SessionEvent } from '@taskward/protocol'
import { frozen } from './body-text'

/*
 * The session log as chat messages (pure): each conversation event mapped to a message, a call kept
 * with its results as one group, long values cut with a visible marker. What is shown of it, and in
 * which layout, is context.ts.
 */

export type ChatMessage =
  | { role: 'system', content: string }
  | { role: 'user', content: string }
  | { role: 'assistant', content: string | null, tool_calls?: ChatToolCall[] }
  | { role: 'tool', tool_call_id: string, content: string }

export interface ChatToolCall {
  id: string
  type: 'function'
  function: { name: string, arguments: string }
}

/** A cut marker at the end of a text (what `cut` appends): its count of characters left out. */
const MARKER = /\n…\[cut: (\d+) more characters not shown[^\]\n]*\]$/

/**
 * Cut `text` to `limit` characters with a marker that says how much was left out (`hint`, when given,
 * says how to see it: it gets the position the cut starts at). A text that already ends with a marker
 * (the event window keeps long values cut) is cut again from its shown part, and the new marker counts
 * both: the count is always of the original value's characters.
 */
export function cut(text: string, limit: number, hint?: (at: number) => string): string {
  const marked = MARKER.exec(text)
  const shown = marked ? text.slice(0, marked.index) : text
  const hidden = marked ? Number(marked[1]) : 0
  if (shown.length <= limit && (marked || text.length <= limit)) return text
  const at = cutIndex(shown, Math.max(0, Math.min(limit, shown.length)))
  return `${shown.slice(0, at)}\n…[cut: ${shown.length - at + hidden} more characters not shown${hint ? `; ${hint(at)}` : ''}]`
}

/**
 * A tool call's arguments in about `limit` characters, always valid JSON: servers parse them (vLLM
 * runs json.loads on every call's arguments and refuses the request otherwise), so a long value is
 * cut inside its string (`fitJson`); where no string is long enough, the cut text is kept as one.
 */
export function argumentsText(args: unknown, limit: number): string {
  const text = fitJson(args, limit)
  try {
    JSON.parse(text)
    return text
  } catch {
    return json({ cut: cut(json(args), limit) })
  }
}

/** Room a cut marker with a hint takes (the JSON of a value cut to fit is allowed this much past its limit). */
const MARKER_ROOM = 240
const MAX_ROUNDS = 6

/**
 * The JSON of `value` in about `limit` characters. While it is longer, its longest string is cut (with
 * `hint`, told where in that string the cut starts): the JSON stays valid and each marker counts the
 * characters of its own value. Only when no string is long enough to make it fit is the JSON text cut.
 */
export function fitJson(value: unknown, limit: number, hint?: (at: number) => string): string {
  // A value the event window already kept cut (at toolResultChars) says how to read the rest too.
  if (hint) value = hinted(value, hint)
  let text = json(value)
  for (let round = 0; round < MAX_ROUNDS && text.length > limit + MARKER_ROOM; round++) {
    const longest = longestString(value)
    if (!longest) break
    const [path, string] = longest
    const marked = MARKER.exec(string)
    const shown = marked ? marked.index : string.length
    // Each character is at least one character of JSON: cutting `over` of them takes at least `over` off.
    const keep = Math.max(0, shown - (text.length - limit) - (string.length - shown))
    if (keep >= shown) break
    value = replaceAt(value, path, cut(string, keep, hint))
    text = json(value)
  }
  return text.length > limit + MARKER_ROOM ? cut(text, limit) : text
}

/** `value` with every cut marker that says only how much was left out given `hint` too (copies what it changes). */
function hinted(value: unknown, hint: (at: number) => string, depth = 0): unknown {
  if (typeof value === 'string') {
    const marked = MARKER.exec(value)
    if (!marked || marked[0].includes(';')) return value
    return `${value.slice(0, marked.index)}\n…[cut: ${marked[1]} more characters not shown; ${hint(marked.index)}]`
  }
  if (!value || typeof value !== 'object' || depth >= MAX_DEPTH) return value
  if (Array.isArray(value)) return value.map((item) => hinted(item, hint, depth + 1))
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, hinted(item, hint, depth + 1)]))
}

/** The longest string in `value` (at most MAX_DEPTH levels), with its path. */
function longestString(value: unknown, path: (string | number)[] = [], best?: [(string | number)[], string]): [(string | number)[], string] | undefined {
  if (typeof value === 'string') return !best || value.length > best[1].length ? [path, value] : best
  if (!value || typeof value !== 'object' || path.length >= MAX_DEPTH) return best
  for (const [key, item] of Object.entries(value)) best = longestString(item, [...path, Array.isArray(value) ? Number(key) : key], best)
  return best
}

/** `value` with the string at `path` replaced (copies along the path; `value` is not changed). */
function replaceAt(value: unknown, path: (string | number)[], replacement: string): unknown {
  if (!path.length) return replacement
  const [key, ...rest] = path
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) }
  copy[key] = replaceAt(copy[key], rest, replacement)
  return copy
}

const MAX_ITEMS = 200
const MAX_DEPTH = 20

/**
 * `value` with every string longer than `limit` cut (with the marker), arrays and objects kept to their
 * first 200 entries: what an event may hold once it is only going to be shown cut. Keeps JSON valid.
 */
export function shrink(value: unknown, limit: number, depth = 0): unknown {
  if (typeof value === 'string') return value.length > limit ? cut(value, limit) : value
  if (!value || typeof value !== 'object') return value
  if (depth >= MAX_DEPTH) return '…[nested too deep to show]'
  if (Array.isArray(value)) {
    const head = value.slice(0, MAX_ITEMS).map((item) => shrink(item, limit, depth + 1))
    if (value.length > MAX_ITEMS) head.push(`…[${value.length - MAX_ITEMS} more items not shown]`)
    return head
  }
  const keys = Object.keys(value)
  const out: Record<string, unknown> = {}
  for (const key of keys.slice(0, MAX_ITEMS)) out[key] = shrink((value as Record<string, unknown>)[key], limit, depth + 1)
  if (keys.length > MAX_ITEMS) out['…'] = `${keys.length - MAX_ITEMS} more keys not shown`
  return out
}

export const json = (value: unknown) => {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return '"(unserializable)"'
  }
}

/**
 * A unit that is kept or dropped whole: one message, or an assistant call message with its results;
 * `seq` is its first event's (what a window's start is named by).
 */
export interface Group {
  seq: number
  messages: ChatMessage[]
  /**
   * A group of tool calls: its messages again, with every argument list and result cut at `chars`
   * (what the layout uses to fit the newest call and its results into the room left).
   */
  recut?: (chars: number) => ChatMessage[]
}

/**
 * What a cut tool result says about the rest: where a `read` goes on (its own `offset` plus where the
 * content was cut), and for any tool, how to see less at once.
 */
function resultHint(name: string, args: unknown): (at: number) => string {
  if (name === 'read') {
    const base = Number((args as { offset?: unknown } | undefined)?.offset)
    const offset = Number.isSafeInteger(base) && base > 0 ? base : 0
    return (at) => `the file goes on at character ${offset + at}: \`read\` with \`offset\` ${offset + at} and a \`limit\` shows more, \`grep\` finds lines`
  }
  return () => 'a narrower call shows the rest: `read` with `offset` and `limit`, or `grep`'
}

/**
 * A result event's tool message content at the default limit, kept with the event: every step lays out
 * the same window events again, and cutting a long result as JSON costs a few serializations.
 */
const rendered = new WeakMap<object, { chars: number, args: unknown, content: string }>()
function renderedResult(event: SessionEvent, answer: Record<string, any>, chars: number): string {
  const kept = rendered.get(event)
  if (kept && kept.chars === chars && kept.args === answer.args) return kept.content
  const content = toolContent(event.seq, answer, chars)
  rendered.set(event, { chars, args: answer.args, content })
  return content
}

/**
 * What `eventsToGroups` made of an event, kept with it while the inputs it was made from are the same
 * objects: a window's events are laid out again on every step, and the same message object each time
 * lets what is derived from it — its request text (body-text.ts) — be made once, not every step.
 * Messages are frozen once made (an assistant message is made whole when its group closes).
 */
const made = new WeakMap<object, { inputs: readonly unknown[], value: any }>()
const assistants = new WeakMap<object, { inputs: readonly unknown[], value: any }>()
function madeFrom<T>(kept: WeakMap<object, { inputs: readonly unknown[], value: any }>, event: object, inputs: readonly unknown[], make: () => T): T {
  const previous = kept.get(event)
  if (previous && previous.inputs.length === inputs.length && previous.inputs.every((input, i) => input === inputs[i])) return previous.value
  // Frozen: handed to every later layout (and to callers of the exported layout functions), it must
  // never change; and `bodyText` keeps the text only of what is frozen whole.
  const value = frozen(make())
  kept.set(event, { inputs, value })
  return value
}

/** One tool message: the result (or error) with its seq, fit to `chars`. */
const toolContent = (seq: number, data: Record<string, any>, chars: number) => fitJson(
  data.error ? { seq, error: data.error } : { seq, result: data.result ?? null }, chars, resultHint(String(data.name ?? ''), data.args),
)

/**
 * Map events to groups of chat messages, in order. `origins`, when given, learns the event each message
 * (or tool call) was made from, where it was made from that one event alone: so that a caller may keep
 * what it derives from the message (its token count) with the event, which later steps show unchanged.
 */
export function eventsToGroups(events: readonly SessionEvent[], limits: { toolResultChars: number }, origins?: WeakMap<object, SessionEvent>): Group[] {
  const groups: Group[] = []
  // The assistant message tool calls attach to, while only its own calls and results follow it.
  let open: { event: SessionEvent, group: Group, message: Extract<ChatMessage, { role: 'assistant' }>, pending: Set<string>, calls: CallPart[], answers: Map<string, { seq: number, data: Record<string, any> }> } | undefined
  // Slash commands (and their replies) the operator ran while a call was still running: shown after
  // the call's results, since the API wants every result right after its call.
  let deferred: Group[] = []
  const close = () => {
    if (open) {
      // A call without a recorded result (a crash mid-call): the API needs an answer for every call.
      for (const id of open.pending) open.group.messages.push({ role: 'tool', tool_call_id: id, content: NO_RESULT })
      open.group.recut = recutter(open.message.content, open.calls, open.answers)
      // The assistant message as shown, made whole now that its calls are known: the same object on
      // every step that shows the same calls.
      const { content, tool_calls: calls } = open.message
      const whole: ChatMessage = madeFrom(assistants, open.event, [content, ...calls ?? []], (): ChatMessage => calls?.length ? { role: 'assistant', content, tool_calls: [...calls] } : { role: 'assistant', content })
      if (origins?.has(open.message)) origins.set(whole, open.event)
      open.group.messages[0] = whole
      open = undefined
    }
    groups.push(...deferred)
    deferred = []
  }
  const waiting = () => !!open?.pending.size
  for (const event of events) {
    const data = event.data ?? {}
    switch (event.type) {
      case 'user/message': {
        const message = madeFrom(made, event, [data.origin, data.text], (): ChatMessage => {
          const origin = data.origin && data.origin !== 'user' ? `[${data.origin}] ` : ''
          return { role: 'user', content: origin + String(data.text ?? '') }
        })
        origins?.set(message, event)
        const group: Group = { seq: event.seq, messages: [message] }
        if (waiting() && String(data.text ?? '').startsWith('/')) {
          deferred.push(group)
          break
        }
        close()
        groups.push(group)
        break
      }
      case 'assistant/message': {
        close()
        const message: ChatMessage = { role: 'assistant', content: String(data.text ?? '') }
        // Its content is the event's; the calls that follow are counted by their own events.
        origins?.set(message, event)
        const group: Group = { seq: event.seq, messages: [message] }
        groups.push(group)
        open = { event, group, message, pending: new Set(), calls: [], answers: new Map() }
        break
      }
      case 'tool/call': {
        if (!open) {
          const message: ChatMessage = { role: 'assistant', content: null }
          const group: Group = { seq: event.seq, messages: [message] }
          groups.push(group)
          open = { event, group, message, pending: new Set(), calls: [], answers: new Map() }
        }
        const id = String(data.callId ?? `call-${event.seq}`)
        const call = madeFrom(made, event, [id, data.name, data.args, limits.toolResultChars], (): ChatToolCall =>
          ({ id, type: 'function', function: { name: String(data.name ?? ''), arguments: argumentsText(data.args ?? {}, limits.toolResultChars) } }))
        origins?.set(call, event)
        ;(open.message.tool_calls ??= []).push(call)
        open.pending.add(id)
        open.calls.push({ id, name: call.function.name, args: data.args ?? {} })
        break
      }
      case 'tool/result': {
        const id = String(data.callId ?? '')
        // A result whose call fell outside the window has nothing to answer: left out.
        if (!open?.pending.has(id)) break
        open.pending.delete(id)
        // The seq lets the model cite this result as evidence (task_report_stage, repairs, verdicts).
        const answer = { ...data, args: open.calls.find((c) => c.id === id)?.args }
        open.answers.set(id, { seq: event.seq, data: answer })
        const content = renderedResult(event, answer, limits.toolResultChars)
        const message = madeFrom(made, event, [id, content], (): ChatMessage => ({ role: 'tool', tool_call_id: id, content }))
        origins?.set(message, event)
        open.group.messages.push(message)
        // Every call answered: what waited behind them follows now.
        if (!open.pending.size && deferred.length) close()
        break
      }
      case 'command/reply':
      case 'agent/refused':
      case 'agent/error': {
        const what = event.type === 'command/reply' ? 'command reply' : event.type === 'agent/refused' ? 'step refused' : 'model error'
        const message = madeFrom(made, event, [what, limits.toolResultChars], (): ChatMessage => ({ role: 'user', content: `[host: ${what}] ${cut(json(data), limits.toolResultChars)}` }))
        origins?.set(message, event)
        const group: Group = { seq: event.seq, messages: [message] }
        if (waiting() && event.type === 'command/reply') {
          deferred.push(group)
          break
        }
        close()
        groups.push(group)
        break
      }
      // A step's usage is recorded before its calls: calls after it are a new step's, in an assistant
      // message of their own. Folding them into the previous step's message would change that message
      // on every step (the cached prefix with it) and show the model steps it never took.
      case 'model/usage': {
        if (open?.message.tool_calls?.length) close()
        break
      }
      // Records and other plugin events are not conversation: the task state covers them.
      default: break
    }
  }
  close()
  return groups
}

const NO_RESULT = '(no result was recorded)'

interface CallPart {
  id: string
  name: string
  args: unknown
}

/** A call group's messages rebuilt with arguments and results cut at `chars` (fresh objects: never counted by event). */
function recutter(content: string | null, calls: CallPart[], answers: Map<string, { seq: number, data: Record<string, any> }>) {
  return (chars: number): ChatMessage[] => [
    { role: 'assistant', content, tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: argumentsText(c.args, chars) } })) },
    ...calls.map((c): ChatMessage => {
      const answer = answers.get(c.id)
      return { role: 'tool', tool_call_id: c.id, content: answer ? toolContent(answer.seq, answer.data, chars) : NO_RESULT }
    }),
  ]
}

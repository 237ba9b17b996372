import type { SessionEvent } from '@taskward/protocol'

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

/** Cut `text` to `limit` characters with a marker that says how much was left out. */
export function cut(text: string, limit: number): string {
  if (text.length <= limit) return text
  return `${text.slice(0, Math.max(0, limit))}\n…[cut: ${text.length - limit} more characters not shown]`
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
}

/**
 * Map events to groups of chat messages, in order. `origins`, when given, learns the event each message
 * (or tool call) was made from, where it was made from that one event alone: so that a caller may keep
 * what it derives from the message (its token count) with the event, which later steps show unchanged.
 */
export function eventsToGroups(events: readonly SessionEvent[], limits: { toolResultChars: number }, origins?: WeakMap<object, SessionEvent>): Group[] {
  const groups: Group[] = []
  // The assistant message tool calls attach to, while only its own calls and results follow it.
  let open: { group: Group, message: Extract<ChatMessage, { role: 'assistant' }>, pending: Set<string> } | undefined
  // Slash commands (and their replies) the operator ran while a call was still running: shown after
  // the call's results, since the API wants every result right after its call.
  let deferred: Group[] = []
  const close = () => {
    if (open) {
      // A call without a recorded result (a crash mid-call): the API needs an answer for every call.
      for (const id of open.pending) open.group.messages.push({ role: 'tool', tool_call_id: id, content: '(no result was recorded)' })
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
        const origin = data.origin && data.origin !== 'user' ? `[${data.origin}] ` : ''
        const message: ChatMessage = { role: 'user', content: origin + String(data.text ?? '') }
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
        open = { group, message, pending: new Set() }
        break
      }
      case 'tool/call': {
        if (!open) {
          const message: ChatMessage = { role: 'assistant', content: null }
          const group: Group = { seq: event.seq, messages: [message] }
          groups.push(group)
          open = { group, message, pending: new Set() }
        }
        const id = String(data.callId ?? `call-${event.seq}`)
        const call: ChatToolCall = { id, type: 'function', function: { name: String(data.name ?? ''), arguments: cut(json(data.args ?? {}), limits.toolResultChars) } }
        origins?.set(call, event)
        ;(open.message.tool_calls ??= []).push(call)
        open.pending.add(id)
        break
      }
      case 'tool/result': {
        const id = String(data.callId ?? '')
        // A result whose call fell outside the window has nothing to answer: left out.
        if (!open?.pending.has(id)) break
        open.pending.delete(id)
        // The seq lets the model cite this result as evidence (task_report_stage, repairs, verdicts).
        const body = data.error ? { seq: event.seq, error: data.error } : { seq: event.seq, result: data.result ?? null }
        const message: ChatMessage = { role: 'tool', tool_call_id: id, content: cut(json(body), limits.toolResultChars) }
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
        const message: ChatMessage = { role: 'user', content: `[host: ${what}] ${cut(json(data), limits.toolResultChars)}` }
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


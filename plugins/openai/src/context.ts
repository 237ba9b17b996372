import type { SessionEvent } from '@taskward/protocol'

/*
 * What the model sees on each step, built from the session log alone (pure: no I/O, no clock).
 *
 *   1. one system message: the role's instructions and, when a supervised task exists, its state
 *      (what `task_status` returns), cut at `taskStateChars`;
 *   2. the latest events of the session mapped to chat messages, oldest dropped first until the
 *      whole estimate fits `contextTokens`; a note says how many were left out;
 *   3. the turn's input (the latest user message) is always kept, cut if it alone is too long.
 *
 * Tool results carry their event seq (to cite as evidence) and are cut at `toolResultChars` with a visible marker. The whole log is never sent: the
 * caller reads at most `maxEvents` events, and the budget trims further.
 */

export interface ContextLimits {
  /** Estimated tokens of all messages together (≈ 4 characters a token). */
  contextTokens: number
  /** Characters of one tool result (or argument list) before it is cut with a marker. */
  toolResultChars: number
  /** Characters of the task state in the system message. */
  taskStateChars: number
}

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

export interface ContextInput {
  instructions: string
  /** The supervised task's state (any JSON), or undefined. */
  taskState?: unknown
  /** The latest events of the session, in seq order. */
  events: readonly SessionEvent[]
  /** Events before `events[0]` that were not even read (the caller's window). */
  unread?: number
}

export const CHARS_PER_TOKEN = 4

export const estimateTokens = (text: string) => Math.ceil(text.length / CHARS_PER_TOKEN)

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

const json = (value: unknown) => {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return '"(unserializable)"'
  }
}

function messageTokens(message: ChatMessage): number {
  let text = 'content' in message && message.content ? message.content : ''
  if (message.role === 'assistant') for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments
  return estimateTokens(text) + 4
}

/** A unit that is kept or dropped whole: one message, or an assistant call message with its results. */
type Group = ChatMessage[]

/** Map events to groups of chat messages, in order. */
export function eventsToGroups(events: readonly SessionEvent[], limits: Pick<ContextLimits, 'toolResultChars'>): Group[] {
  const groups: Group[] = []
  // The assistant message tool calls attach to, while only its own calls and results follow it.
  let open: { group: Group, message: Extract<ChatMessage, { role: 'assistant' }>, pending: Set<string> } | undefined
  // Slash commands (and their replies) the operator ran while a call was still running: shown after
  // the call's results, since the API wants every result right after its call.
  let deferred: Group[] = []
  const close = () => {
    if (open) {
      // A call without a recorded result (a crash mid-call): the API needs an answer for every call.
      for (const id of open.pending) open.group.push({ role: 'tool', tool_call_id: id, content: '(no result was recorded)' })
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
        const group: Group = [{ role: 'user', content: origin + String(data.text ?? '') }]
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
        const group: Group = [message]
        groups.push(group)
        open = { group, message, pending: new Set() }
        break
      }
      case 'tool/call': {
        if (!open) {
          const message: ChatMessage = { role: 'assistant', content: null }
          const group: Group = [message]
          groups.push(group)
          open = { group, message, pending: new Set() }
        }
        const id = String(data.callId ?? `call-${event.seq}`)
        ;(open.message.tool_calls ??= []).push({
          id, type: 'function', function: { name: String(data.name ?? ''), arguments: cut(json(data.args ?? {}), limits.toolResultChars) },
        })
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
        open.group.push({ role: 'tool', tool_call_id: id, content: cut(json(body), limits.toolResultChars) })
        // Every call answered: what waited behind them follows now.
        if (!open.pending.size && deferred.length) close()
        break
      }
      case 'command/reply':
      case 'agent/refused':
      case 'agent/error': {
        const what = event.type === 'command/reply' ? 'command reply' : event.type === 'agent/refused' ? 'step refused' : 'model error'
        const group: Group = [{ role: 'user', content: `[host: ${what}] ${cut(json(data), limits.toolResultChars)}` }]
        if (waiting() && event.type === 'command/reply') {
          deferred.push(group)
          break
        }
        close()
        groups.push(group)
        break
      }
      // Records, usage and other plugin events are not conversation: the task state covers them.
      default: break
    }
  }
  close()
  return groups
}

/** The messages of one model step, within the limits. */
export function buildMessages(input: ContextInput, limits: ContextLimits): ChatMessage[] {
  const state = input.taskState === undefined ? '' : `\n\nCurrent task state (task_status):\n${cut(json(input.taskState), limits.taskStateChars)}`
  const system: ChatMessage = { role: 'system', content: input.instructions + state }
  const groups = eventsToGroups(input.events, limits)
  const cost = (group: Group) => group.reduce((sum, message) => sum + messageTokens(message), 0)
  let budget = limits.contextTokens - messageTokens(system) - 32
  // The newest user message is the turn's input: it always stays (cut to half the budget at most).
  // Host notes and slash commands (run at once, often while a turn runs) are not a turn's input.
  const inputIndex = groups.findLastIndex((group) => group[0].role === 'user' && !/^(\[host:|\/)/.test(group[0].content ?? ''))
  let inputGroup: Group | undefined
  if (inputIndex >= 0) {
    const text = (groups[inputIndex][0] as { content: string }).content
    const room = Math.max(200, Math.floor(budget / 2) * CHARS_PER_TOKEN)
    inputGroup = [{ role: 'user', content: cut(text, room) }]
    budget -= cost(inputGroup)
  }
  // Newest first; the first group that does not fit ends the window, so what is kept is contiguous.
  const newer: Group[] = []
  const older: Group[] = []
  let skippedNewer = 0
  let skippedOlder = 0
  let full = false
  for (let index = groups.length - 1; index >= 0; index--) {
    if (index === inputIndex) continue
    const after = index > inputIndex
    if (!full && cost(groups[index]) <= budget) {
      budget -= cost(groups[index])
      if (after) newer.unshift(groups[index])
      else older.unshift(groups[index])
      continue
    }
    full = true
    if (after) skippedNewer++
    else skippedOlder++
  }
  const note = (count: number, where: string): Group =>
    count ? [{ role: 'user', content: `[host: ${count} ${where} conversation entries are not shown; the session log has them]` }] : []
  return [
    system,
    ...note(skippedOlder + (input.unread ?? 0), 'earlier'),
    ...older.flat(),
    ...(inputGroup ?? []),
    ...note(skippedNewer, 'more of this turn\'s'),
    ...newer.flat(),
  ]
}

import type { SessionEvent } from '@taskward/protocol'
import { cut, eventsToGroups, json, type ChatMessage, type Group } from './transcript'

export { cut, shrink, eventsToGroups, type ChatMessage, type ChatToolCall, type Group } from './transcript'

/*
 * What the model sees on each step, laid out so that provider prompt caches hit (pure: no I/O, no clock).
 *
 *   1. the system message: the role's instructions and the workspace, nothing that changes;
 *      (the tool schemas, in a fixed order, are part of this stable head: adapter.ts)
 *   2. the transcript, append-only: the session's conversation from the window's start (`keepFrom`,
 *      a seq) on, with a note naming that start when earlier entries are not shown. The turn's input
 *      is always shown: in place, or pinned right after the note when it is older than the start;
 *   3. last, what changes every step: the task state (what `task_status` returns), cut at `taskStateChars`.
 *
 * The window's start stays where it is while the transcript fits; once it does not, it moves forward
 * in one jump, down to `lowWater` of the room, so the prefix then stays put again for many steps
 * (instead of shifting on every step once the window is full).
 */

export interface ContextLimits {
  /** Tokens all messages together may take (as `count` estimates them). */
  contextTokens: number
  /** Characters of one tool result (or argument list) before it is cut with a marker. */
  toolResultChars: number
  /** Characters of the task state. */
  taskStateChars: number
  /** Share of the transcript's room kept when the window must drop entries (default 0.5). */
  lowWater?: number
}

export interface ContextInput {
  instructions: string
  /** The supervised task's state (any JSON), or undefined. */
  taskState?: unknown
  /** The latest events of the session, in seq order. */
  events: readonly SessionEvent[]
  /** Events before `events[0]` that were not even read (the caller's window). */
  unread?: number
  /** Where this session's window started on its previous step (undefined: no previous step known). */
  keepFrom?: number
}

export interface Layout {
  messages: ChatMessage[]
  /** The seq the shown transcript starts at: hand it back as `keepFrom` next step. */
  keepFrom: number
  /** This step moved the window's start (the prefix changed here). */
  dropped: boolean
  /** Estimated tokens of all messages. */
  tokens: number
  /** Estimated tokens of what is never dropped: system message, turn input, task state, note. */
  fixed: number
  /** False when even `fixed` exceeds `contextTokens`: the turn's input cannot fit. */
  fits: boolean
}

export const CHARS_PER_TOKEN = 4

/** ≈ 4 characters a token: the estimate of a route that has not loaded its tokenizer (and of pure tests). */
export const estimateTokens = (text: string) => Math.ceil(text.length / CHARS_PER_TOKEN)

export function estimateMessage(message: ChatMessage): number {
  let text = 'content' in message && message.content ? message.content : ''
  if (message.role === 'assistant') for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments
  return estimateTokens(text) + 4
}

/** The first line of the task-state message (what a reader of the request looks for). */
export const TASK_STATE_HEADER = '[host: current task state (task_status), as of this step]\n'

/** Tokens kept for the note on dropped entries. */
const NOTE_TOKENS = 32

const isInput = (group: Group) => group.messages[0].role === 'user' && !/^(\[host:|\/)/.test(group.messages[0].content ?? '')

/** The messages of one model step, within the limits, in the cache-stable layout. */
export function layoutMessages(input: ContextInput, limits: ContextLimits, count: (message: ChatMessage) => number = estimateMessage): Layout {
  const system: ChatMessage = { role: 'system', content: input.instructions }
  const tail: ChatMessage | undefined = input.taskState === undefined ? undefined
    : { role: 'user', content: TASK_STATE_HEADER + cut(json(input.taskState), limits.taskStateChars) }
  const groups = eventsToGroups(input.events, limits)
  const cost = (group: Group) => group.messages.reduce((sum, message) => sum + count(message), 0)
  // The room of the conversation, independent of what changes per step (so the input's cut is stable).
  const room = limits.contextTokens - count(system) - NOTE_TOKENS
  // The newest user message is the turn's input: it always stays (cut to half the room at most).
  // Host notes and slash commands (run at once, often while a turn runs) are not a turn's input.
  const inputIndex = groups.findLastIndex(isInput)
  let inputGroup: Group | undefined
  if (inputIndex >= 0) {
    const text = (groups[inputIndex].messages[0] as { content: string }).content
    inputGroup = { seq: groups[inputIndex].seq, messages: [{ role: 'user', content: cut(text, Math.max(200, Math.floor(room / 2) * CHARS_PER_TOKEN)) }] }
  }
  const fixed = count(system) + NOTE_TOKENS + (inputGroup ? cost(inputGroup) : 0) + (tail ? count(tail) : 0)
  const budget = limits.contextTokens - fixed
  const others = groups.filter((_, index) => index !== inputIndex)
  const costs = others.map(cost)
  const costFrom = (from: number) => others.reduce((sum, group, index) => group.seq >= from ? sum + costs[index] : sum, 0)

  // The earliest start that still sees only events that were read (the caller's window slides once the
  // session is longer than it).
  const readFrom = input.unread ? input.events[0]?.seq ?? 0 : 0
  let keepFrom = input.keepFrom
  let dropped = false
  if (keepFrom === undefined || keepFrom < readFrom || costFrom(keepFrom) > budget) {
    const first = keepFrom === undefined
    if (first && !input.unread && costFrom(0) <= budget) {
      keepFrom = 0
    } else {
      // One jump, down to the low-water mark: newest groups first while they fit it.
      const target = budget * (limits.lowWater ?? 0.5)
      let index = others.length
      let kept = 0
      while (index > 0 && kept + costs[index - 1] <= target) kept += costs[--index]
      let start = index < others.length ? others[index].seq : (input.events.at(-1)?.seq ?? -1) + 1
      // Far enough into a sliding read window that it can slide half its length before the next jump.
      if (input.unread && input.events.length) start = Math.max(start, input.events[Math.floor(input.events.length / 2)].seq)
      dropped = start > (keepFrom ?? 0) || others.some((group) => group.seq < start)
      keepFrom = Math.max(start, keepFrom ?? 0)
    }
  }
  const from = keepFrom
  const shown = groups.filter((group, index) => index === inputIndex ? group.seq >= from : group.seq >= from)
  const pinned = inputGroup && inputGroup.seq < from ? inputGroup.messages : []
  const note: ChatMessage[] = from > 0
    ? [{ role: 'user', content: `[host: conversation entries before seq ${from} are not shown; the session log has them]` }] : []
  const messages: ChatMessage[] = [
    system,
    ...note,
    ...pinned,
    ...shown.flatMap((group) => group === groups[inputIndex] ? inputGroup!.messages : group.messages),
    ...(tail ? [tail] : []),
  ]
  const tokens = fixed + costFrom(from)
  return { messages, keepFrom: from, dropped, tokens, fixed, fits: fixed <= limits.contextTokens }
}

/** The messages of one model step (no window kept from a previous step). */
export function buildMessages(input: ContextInput, limits: ContextLimits): ChatMessage[] {
  return layoutMessages(input, limits).messages
}

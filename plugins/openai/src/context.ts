import type { SessionEvent } from '@taskward/protocol'
import { cut, eventsToGroups, json, type ChatMessage, type Group } from './transcript'
import { nextNote, noteMessage as renderNote, type StateNote } from './state-notes'
import { frozen } from './body-text'

export { TASK_STATE_HEADER, type StateNote } from './state-notes'

export { cut, shrink, eventsToGroups, type ChatMessage, type ChatToolCall, type Group } from './transcript'

/*
 * What the model sees on each step, laid out so that provider prompt caches hit (pure: no I/O, no clock).
 *
 *   1. the system message: the role's instructions and the workspace, nothing that changes;
 *      (the tool schemas, in a fixed order, are part of this stable head: adapter.ts)
 *   2. the transcript, append-only: the session's conversation from the window's start (`keepFrom`,
 *      a seq) on, with a note naming that start when earlier entries are not shown. The turn's input
 *      is always shown: in place, or pinned right after the note when it is older than the start;
 *   3. the task state (what `task_status` returns, cut at `taskStateChars`) as a note appended after the
 *      transcript when it changed since the note last shown — and left where it was shown, so that a
 *      step whose state did not change sends exactly the previous request plus what is new. Never
 *      above the transcript's new entries, never rewritten.
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
  /** The task-state notes shown on its previous step (`Layout.notes`). */
  notes?: readonly StateNote[]
  /** Learns the event each message was made from (see `eventsToGroups`): for a `count` that keeps counts with events. */
  origins?: WeakMap<object, SessionEvent>
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
  /** `fixed` and the newest call with its results, cut as far as they are ever cut: what the step cannot do without. */
  required: number
  /** False when even `fixed` (with the newest call and its results, cut) exceeds `contextTokens`: the step cannot fit. */
  fits: boolean
  /** The newest tool call group, always shown: its seq, and whether its arguments or results were cut to fit. */
  newest?: { seq: number, cut: boolean }
  /** The task-state notes shown: hand them back as `notes` next step. */
  notes: StateNote[]
  /**
   * Whether a count decided something: the turn's input cut (its share of the room is what the system
   * message's count leaves), the newest call cut to fit, or the window's start chosen to fit. A layout
   * whose `count` gave upper bounds is the exact one when this is false (every decision would fall alike
   * with counts at or below them); then `shownTokens` gives its exact `tokens` from exact counts.
   */
  fitted: boolean
}

export const CHARS_PER_TOKEN = 4

/** ≈ 4 characters a token: the estimate of a route that has not loaded its tokenizer (and of pure tests). */
export const estimateTokens = (text: string) => Math.ceil(text.length / CHARS_PER_TOKEN)

export function estimateMessage(message: ChatMessage): number {
  let text = 'content' in message && message.content ? message.content : ''
  if (message.role === 'assistant') for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments
  return estimateTokens(text) + 4
}

/** Tokens kept for the note on dropped entries. */
const NOTE_TOKENS = 32

const isInput = (group: Group) => group.messages[0].role === 'user' && !/^(\[host:|\/)/.test(group.messages[0].content ?? '')

/** One unit of the transcript as laid out: a group, or a state note (`seq` just below its `beforeSeq`). */
interface Item {
  seq: number
  messages: ChatMessage[]
  note?: StateNote
  group?: Group
}

/**
 * The system message of `instructions`, the same object step after step: its request text (body-text.ts)
 * is then made once. Kept for as many instruction texts as prompts.ts keeps.
 */
function systemMessage(instructions: string): ChatMessage {
  let message = systemMessages.get(instructions)
  if (!message) {
    message = frozen<ChatMessage>({ role: 'system', content: instructions })
    systemMessages.set(instructions, message)
    if (systemMessages.size > 4096) systemMessages.delete(systemMessages.keys().next().value!)
  }
  return message
}
const systemMessages = new Map<string, ChatMessage>()

/** Characters a result of the newest call is cut to at the least: below that, the step does not fit. */
export const MIN_RESULT_CHARS = 200

/** The messages of one model step, within the limits, in the cache-stable layout. */
export function layoutMessages(input: ContextInput, limits: ContextLimits, count: (message: ChatMessage) => number = estimateMessage): Layout {
  const system = systemMessage(input.instructions)
  const systemCost = count(system)
  const groups = eventsToGroups(input.events, limits, input.origins)
  const cost = (messages: ChatMessage[]) => messages.reduce((sum, message) => sum + count(message), 0)
  const nextSeq = (input.events.at(-1)?.seq ?? -1) + 1
  // The state notes: those kept from earlier steps (none past the log's end), and a new one at the end
  // when the state is not the last one shown.
  const notes = (input.notes ?? []).filter((note) => note.beforeSeq <= nextSeq)
  const state = input.taskState === undefined ? undefined : cut(json(input.taskState), limits.taskStateChars)
  if (state !== undefined && notes.at(-1)?.state !== state) notes.push(nextNote(nextSeq, state, notes.at(-1)))
  const noteMessage = (note: StateNote): ChatMessage => renderNote(note, (beforeSeq) => notes.find((other) => other.beforeSeq === beforeSeq))
  const latest = state === undefined ? undefined : notes.at(-1)

  // The room of the conversation, independent of what changes per step (so the input's cut is stable).
  const room = limits.contextTokens - systemCost - NOTE_TOKENS
  // The newest user message is the turn's input: it always stays (cut to half the room at most).
  // Host notes and slash commands (run at once, often while a turn runs) are not a turn's input.
  const inputIndex = groups.findLastIndex(isInput)
  let fitted = false
  let inputMessages: ChatMessage[] | undefined
  if (inputIndex >= 0) {
    const text = (groups[inputIndex].messages[0] as { content: string }).content
    const [shown, cutToFit] = cutInput(text, Math.floor(room / 2), count)
    inputMessages = [{ role: 'user', content: shown }]
    fitted ||= cutToFit
  }
  // Groups and notes in order: a note goes before the first group at or after its seq.
  const items: Item[] = []
  let pending = 0
  const older = state === undefined ? [] : notes.slice(0, -1)
  for (const [index, group] of groups.entries()) {
    while (pending < older.length && older[pending].beforeSeq <= group.seq) {
      const note = older[pending++]
      items.push({ seq: note.beforeSeq - 0.5, messages: [noteMessage(note)], note })
    }
    if (index !== inputIndex) items.push({ seq: group.seq, messages: group.messages, group })
  }
  for (; pending < older.length; pending++) items.push({ seq: older[pending].beforeSeq - 0.5, messages: [noteMessage(older[pending])], note: older[pending] })
  const latestMessages = latest ? [noteMessage(latest)] : []
  const fixed = systemCost + NOTE_TOKENS + (inputMessages ? cost(inputMessages) : 0) + cost(latestMessages)
  const budget = limits.contextTokens - fixed
  const costs = items.map((item) => cost(item.messages))
  // The newest tool call and its results always stay (the model acts on them next): older entries are
  // dropped first, and when the group does not fit the room left by what is newer than it, its
  // arguments and results are cut to fit (the markers say how to see the rest). Only when what is newer
  // than it alone leaves too little room is it laid out like any other entry.
  const newestIndex = items.findLastIndex((item) => item.group?.recut !== undefined)
  let newest: { seq: number, cut: boolean } | undefined
  let newestMin = 0
  if (newestIndex >= 0) {
    const newer = costs.slice(newestIndex + 1).reduce((sum, tokens) => sum + tokens, 0)
    const group = items[newestIndex].group!
    let cutHere = false
    if (costs[newestIndex] > budget - newer) {
      const messages = fitGroup(group, budget - newer, limits.toolResultChars, count)
      items[newestIndex] = { ...items[newestIndex], messages }
      costs[newestIndex] = cost(messages)
      cutHere = true
      fitted = true
    }
    if (costs[newestIndex] + newer <= budget) newest = { seq: items[newestIndex].seq, cut: cutHere }
    // What the step cannot do without: the newest call of this turn. One from before the turn's input (a
    // message after it) that cannot fit even cut short is laid out like any other entry (it may be dropped):
    // otherwise no message could ever get past it.
    const beforeInput = inputIndex >= 0 && items[newestIndex].seq < groups[inputIndex].seq
    if (!beforeInput) newestMin = costs[newestIndex]
  }
  const costFrom = (from: number) => items.reduce((sum, item, index) => item.seq >= from ? sum + costs[index] : sum, 0)

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
      fitted = true
      // One jump, down to the low-water mark: newest items first while they fit it; the start is a group's.
      const target = budget * (limits.lowWater ?? 0.5)
      let index = items.length
      let kept = 0
      while (index > 0 && kept + costs[index - 1] <= target) kept += costs[--index]
      while (index < items.length && items[index].note) index++
      let start = index < items.length ? items[index].seq : nextSeq
      // Far enough into a sliding read window that it can slide half its length before the next jump.
      if (input.unread && input.events.length) start = Math.max(start, input.events[Math.floor(input.events.length / 2)].seq)
      if (newest) start = Math.min(start, newest.seq)
      dropped = start > (keepFrom ?? 0) || items.some((item) => item.seq < start)
      keepFrom = Math.max(start, keepFrom ?? 0)
    }
  }
  // A start past the newest call (kept from a step that could not keep it) comes back to it.
  if (newest && keepFrom > newest.seq) keepFrom = newest.seq
  const from = keepFrom
  // The latest state is always shown: where it was, or, dropped with its place, again at the end.
  let shownLatest = latest
  if (latest && latest.beforeSeq - 0.5 < from) {
    shownLatest = { beforeSeq: nextSeq, state: latest.state }
    notes[notes.length - 1] = shownLatest
  }
  // A note shown as a patch on one the window dropped is shown whole (the start moved: what follows it is new
  // to the endpoint's cache anyway).
  for (const [index, note] of notes.entries()) {
    const base = note.base === undefined ? undefined : notes.find((other) => other.beforeSeq === note.base)
    if (note.base !== undefined && (!base || base.beforeSeq - 0.5 < from)) {
      notes[index] = { beforeSeq: note.beforeSeq, state: note.state }
      if (note === shownLatest) shownLatest = notes[index]
      const at = items.findIndex((other) => other.note === note)
      if (at >= 0) {
        items[at] = { ...items[at], note: notes[index], messages: [noteMessage(notes[index])] }
        costs[at] = cost(items[at].messages)
      }
    }
  }
  // The input in place (or pinned after the drop note), the latest note in place (or last).
  const inputSeq = inputIndex >= 0 ? groups[inputIndex].seq : undefined
  const ordered: { seq: number, messages: ChatMessage[] }[] = items.filter((item) => item.seq >= from)
  if (inputMessages && inputSeq !== undefined && inputSeq >= from) ordered.splice(insertAt(ordered, inputSeq), 0, { seq: inputSeq, messages: inputMessages })
  if (shownLatest) ordered.splice(insertAt(ordered, shownLatest.beforeSeq - 0.5), 0, { seq: shownLatest.beforeSeq - 0.5, messages: [noteMessage(shownLatest)] })
  const pinned = inputMessages && inputSeq !== undefined && inputSeq < from ? inputMessages : []
  const dropNote: ChatMessage[] = from > 0
    ? [{ role: 'user', content: `[host: conversation entries before seq ${Math.ceil(from)} are not shown; the session log has them]` }] : []
  const messages: ChatMessage[] = [system, ...dropNote, ...pinned, ...ordered.flatMap((item) => item.messages)]
  // The latest note as shown (whole again when it lost its base) in place of the one `fixed` counted.
  const tokens = fixed - cost(latestMessages) + (shownLatest ? count(noteMessage(shownLatest)) : 0) + costFrom(from)
  return {
    messages, keepFrom: from, dropped, tokens, fixed, required: fixed + newestMin, fits: fixed + newestMin <= limits.contextTokens,
    ...(newest ? { newest } : {}),
    // Notes the window dropped are not kept: they are never shown again.
    notes: notes.filter((note) => note === shownLatest || note.beforeSeq - 0.5 >= from),
    fitted,
  }
}

/**
 * `layout.tokens` again, from `count`: the reserve for the note on dropped entries and every message
 * shown but that note (`layoutMessages` sums the same). For a layout made with upper bounds and not
 * `fitted`, once its texts are counted.
 */
export function shownTokens(layout: Layout, count: (message: ChatMessage) => number): number {
  let tokens = NOTE_TOKENS
  for (const [index, message] of layout.messages.entries()) if (!(index === 1 && layout.keepFrom > 0)) tokens += count(message)
  return tokens
}

/**
 * The turn's input cut to `tokens` as `count` counts them: first at ≈ 4 characters a token, then, where
 * a script is denser (CJK: about one a character), shorter in proportion to what it still counts over.
 */
function cutInput(text: string, tokens: number, count: (message: ChatMessage) => number): [shown: string, byCount: boolean] {
  let chars = Math.max(200, tokens * CHARS_PER_TOKEN)
  let shown = cut(text, chars)
  // Any cut is: `tokens` is a share of the room the system message's count leaves.
  let byCount = shown !== text
  for (let round = 0; round < 4 && shown !== text && chars > 200; round++) {
    const counted = count({ role: 'user', content: shown })
    if (counted <= tokens) break
    byCount = true
    chars = Math.max(200, Math.floor(chars * tokens / counted * 0.95))
    shown = cut(text, chars)
  }
  return [shown, byCount]
}

/**
 * The newest call group cut to `tokens` as `count` counts them: its arguments and results cut at fewer
 * characters in each round, in proportion to what it still counts over, down to MIN_RESULT_CHARS.
 */
function fitGroup(group: Group, tokens: number, chars: number, count: (message: ChatMessage) => number): ChatMessage[] {
  let messages = group.recut!(chars)
  for (let round = 0; round < 8 && chars > MIN_RESULT_CHARS; round++) {
    const counted = messages.reduce((sum, message) => sum + count(message), 0)
    if (counted <= tokens) break
    chars = Math.max(MIN_RESULT_CHARS, Math.floor(chars * Math.max(0, tokens) / counted * 0.9))
    messages = group.recut!(chars)
  }
  return messages
}

/** Where an item at `seq` goes among `items` (sorted by their position): before the first one past it. */
function insertAt(items: { seq: number }[], seq: number) {
  const index = items.findIndex((item) => item.seq > seq)
  return index < 0 ? items.length : index
}

/** The messages of one model step (no window kept from a previous step). */
export function buildMessages(input: ContextInput, limits: ContextLimits): ChatMessage[] {
  return layoutMessages(input, limits).messages
}

import { createHash } from 'node:crypto'

/*
 * Repeated tool calls (pure: a fold over a session's events and a decision, no I/O, no clock).
 *
 * A call is repeated when the same tool was called with identical arguments and gave an identical
 * result (or error) `limit` times in a row in one session: another identical call then is answered
 * `TOOL_REPEATED` (the model can use the result above or change the arguments); one more after that
 * answer is a loop — the turn ends and a main session's task pauses (`loop`). Any other call, or a
 * person's message, breaks the row. Arguments are compared by their JSON with keys sorted (the order a
 * model writes keys in is not a difference); results by a digest of the same form, so a state holds
 * no result text.
 */

export const DEFAULT_REPEAT_LIMIT = 3

/** The code of the answer to a repeated call. */
export const TOOL_REPEATED = 'TOOL_REPEATED'

/** Calls whose result is still to come, kept at most (a crash mid-call leaves one without a result). */
const MAX_PENDING = 32

export interface RepeatStreak {
  /** The call: its tool and arguments (`callKey`). */
  call: string
  /** Digest of the result the calls gave (`outcomeKey`). */
  outcome: string
  /** Identical calls with identical results in a row. */
  count: number
  /** Identical calls after them that were answered TOOL_REPEATED. */
  refused: number
}

export interface RepeatState {
  /** Calls recorded without their result yet: call id → callKey. */
  pending: [string, string][]
  streak?: RepeatStreak
}

export const REPEAT_INIT: RepeatState = Object.freeze({ pending: [] }) as RepeatState

/** JSON with object keys sorted (arrays keep their order); cycles and non-JSON values as JSON does. */
export function stableJson(value: unknown): string {
  const seen = new WeakSet<object>()
  const sort = (item: unknown): unknown => {
    if (!item || typeof item !== 'object') return item
    if (seen.has(item)) return '[cycle]'
    seen.add(item)
    if (Array.isArray(item)) return item.map(sort)
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(item).sort()) out[key] = sort((item as Record<string, unknown>)[key])
    return out
  }
  try {
    return JSON.stringify(sort(value)) ?? 'null'
  } catch {
    return '"(unserializable)"'
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest('base64')

/** What identifies a call: its tool and its arguments (an absent argument list is `{}`). */
export function callKey(name: string, args: unknown): string {
  return digest(`${name}\u0000${stableJson(args ?? {})}`)
}

/** What identifies a call's outcome: its result, or its error's code and message. */
export function outcomeKey(data: { result?: unknown, error?: { code?: unknown, message?: unknown } }): string {
  return digest(data.error ? `error\u0000${String(data.error.code)}\u0000${String(data.error.message)}` : `result\u0000${stableJson(data.result ?? null)}`)
}

interface EventLike {
  type: string
  data?: any
}

/** The state after one more event of the session. */
export function foldRepeat(state: RepeatState, event: EventLike): RepeatState {
  const data = event.data ?? {}
  switch (event.type) {
    case 'tool/call': {
      const pending = [...state.pending, [String(data.callId ?? ''), callKey(String(data.name ?? ''), data.args)] as [string, string]]
      return { ...state, pending: pending.slice(-MAX_PENDING) }
    }
    case 'tool/result': {
      const id = String(data.callId ?? '')
      const index = state.pending.findIndex(([callId]) => callId === id)
      if (index < 0) return state
      const call = state.pending[index][1]
      const pending = state.pending.filter((_, i) => i !== index)
      const streak = state.streak
      // The answer to a repeated call keeps the row (what it answers is still the same call).
      if (isRepeatedAnswer(data) && streak?.call === call) return { pending, streak: { ...streak, refused: streak.refused + 1 } }
      const outcome = outcomeKey(data)
      if (streak && streak.call === call && streak.outcome === outcome && !streak.refused) return { pending, streak: { ...streak, count: streak.count + 1 } }
      return { pending, streak: { call, outcome, count: 1, refused: 0 } }
    }
    case 'user/message': {
      // A person's message is new information: the row starts again. A person's command (`/task resume`
      // after a loop pause) gives the agent one more TOOL_REPEATED answer before the next pause.
      // Controller turns change nothing.
      const origin = data.origin ?? 'user'
      if (origin !== 'user' || !state.streak) return state
      if (String(data.text ?? '').startsWith('/')) return state.streak.refused ? { ...state, streak: { ...state.streak, refused: 0 } } : state
      return { pending: state.pending }
    }
    case 'command/run':
    case 'dsh:command/run':
      // DSH logs a person's command (`/task resume`) so, not as a message: the same as a command above.
      return state.streak?.refused ? { ...state, streak: { ...state.streak, refused: 0 } } : state
    default: return state
  }
}

/**
 * Whether a result is the TOOL_REPEATED answer: its code on our host; on DSH a guard's denial reaches the
 * log as an error whose text is `Error: TOOL_REPEATED: …` (DSH's `Error: ` and the adapter's refusal
 * text, `code: message`). Never a result's text, nor the code further inside an error's text: what a
 * tool returns is the workspace's (a file, a grep of the docs), and reading as a refusal a result that
 * merely holds the words would let the same call go on for ever. Only read as the answer to the call
 * the row is about.
 */
function isRepeatedAnswer(data: { result?: unknown, error?: { code?: unknown, message?: unknown } }): boolean {
  if (!data.error) return false
  if (data.error.code === TOOL_REPEATED) return true
  return typeof data.error.message === 'string' && /^(?:Error: )?TOOL_REPEATED: /.test(data.error.message)
}

export type RepeatVerdict =
  | { kind: 'allow' }
  /** Answer TOOL_REPEATED: `count` identical calls gave the identical result. */
  | { kind: 'repeated', count: number }
  /** It was answered TOOL_REPEATED and goes on: end the turn, pause the task (`loop`). */
  | { kind: 'loop', count: number }

/** What to do with a call of `name` with `args` in a session whose state is `state`; `limit` 0 turns it off. */
export function judgeRepeat(state: RepeatState, name: string, args: unknown, limit: number): RepeatVerdict {
  const streak = state.streak
  if (!limit || !streak || streak.count < limit) return { kind: 'allow' }
  // The call being judged is recorded before the guards are asked: it is pending, and may be the last one.
  if (streak.call !== callKey(name, args)) return { kind: 'allow' }
  return streak.refused ? { kind: 'loop', count: streak.count } : { kind: 'repeated', count: streak.count }
}

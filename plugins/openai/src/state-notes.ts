import { isDeepStrictEqual } from 'node:util'
import { applyMergePatch, mergePatch } from '@taskward/protocol'
import type { ChatMessage } from './transcript'
import { frozen } from './body-text'

/*
 * Task-state notes as the model reads them (pure). The first note a window shows holds the whole state
 * (`task_status` as JSON); a later one, while the note before it is still shown, holds only what changed
 * since that one, as a JSON merge patch (RFC 7386: objects merge key by key, `null` removes a key, any
 * other value — arrays too — replaces): a short task adds a state note on almost every step, and the whole
 * state each time was most of what a step added to the request. A patch whose note the window dropped is
 * shown whole again (context.ts), so a patch always follows what it patches.
 */

/** How a task-state note starts (what a reader of the request looks for). */
export const TASK_STATE_HEADER = '[host: task state (task_status)'

/**
 * Where a task state was shown: before the event `beforeSeq` (the first event after it). A note stays
 * where it was shown, so the transcript stays append-only; a new one is appended only when the state
 * changed (or the window dropped the last one).
 */
export interface StateNote {
  beforeSeq: number
  /** The whole state (JSON, cut at taskStateChars). */
  state: string
  /** Shown as a patch on the note shown before `base` (its `beforeSeq`); absent: shown whole. */
  base?: number
}

/** A patch is shown only when it is at most this share of the whole state. */
const PATCH_SHARE = 0.7

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value)

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The patch text of `state` on `base` when it is worth showing instead of the whole state, else undefined. */
export function patchText(base: string, state: string): string | undefined {
  const [from, to] = [parse(base), parse(state)]
  // A state cut at taskStateChars is not JSON: shown whole.
  if (!isObject(from) || !isObject(to)) return undefined
  const patch = mergePatch(from, to)
  // A value that becomes null cannot be said by a merge patch (null there means removed): shown whole.
  if (!isDeepStrictEqual(applyMergePatch(from, patch), to)) return undefined
  const text = JSON.stringify(patch)
  return text.length <= state.length * PATCH_SHARE ? text : undefined
}

/**
 * Messages made, by note: a note is laid out on every step while the window shows it (and several times
 * within one layout), and making its message — two parses, a patch, a deep comparison — cost more than
 * the rest of the layout of a short task. Valid while the note patches the same base (or none).
 */
const made = new WeakMap<StateNote, { base?: StateNote, message: ChatMessage }>()

/** The message of `note`; `baseOf` finds the note it patches (missing: shown whole). */
export function noteMessage(note: StateNote, baseOf: (beforeSeq: number) => StateNote | undefined): ChatMessage {
  const base = note.base === undefined ? undefined : baseOf(note.base)
  const kept = made.get(note)
  // Notes are never changed in place (a note shown otherwise is a new object), so the same base object means the same text.
  if (kept && kept.base === base) return kept.message
  const message = frozen(render(note, base))
  made.set(note, { base, message })
  return message
}

function render(note: StateNote, base: StateNote | undefined): ChatMessage {
  const patch = base && patchText(base.state, note.state)
  if (base && patch !== undefined) {
    return {
      role: 'user',
      // How to read it is said once, in the instructions (prompts.ts): this header is added on most steps.
      content: `${TASK_STATE_HEADER} as of seq ${note.beforeSeq}: changes since seq ${base.beforeSeq}, a JSON merge patch]\n${patch}`,
    }
  }
  return { role: 'user', content: `${TASK_STATE_HEADER} as of seq ${note.beforeSeq}; it holds until a newer one follows]\n${note.state}` }
}

/** The note for a new `state` after `previous` (the last note shown, if it stays shown): a patch on it when that is worth it. */
export function nextNote(beforeSeq: number, state: string, previous: StateNote | undefined): StateNote {
  return previous && patchText(previous.state, state) !== undefined ? { beforeSeq, state, base: previous.beforeSeq } : { beforeSeq, state }
}

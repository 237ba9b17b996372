import type { SessionEvent } from '@taskward/protocol'
import type { StateNote } from './state-notes'

/*
 * The window's start and its task-state notes, kept in the session log (pure). A route keeps both in
 * memory from step to step (context.ts keeps them stable); a host that restarts has lost them, and a
 * window laid out afresh differs from what the endpoint cached (the notes move to the end, the start
 * jumps elsewhere): every session's first step would be a full cache miss. So a step that moved the start
 * or showed a new note records it (`model/window {route, keepFrom, notes?}`, notes only the new ones),
 * and a route without them in memory reads them back from the events it lays out.
 */

export const WINDOW_EVENT = 'model/window'

export interface WindowStart {
  keepFrom: number
  notes: StateNote[]
}

const isNote = (note: any): note is StateNote => Number.isSafeInteger(note?.beforeSeq) && typeof note?.state === 'string'
  && (note.base === undefined || Number.isSafeInteger(note.base))
const sameNote = (a: StateNote, b: StateNote) => a.beforeSeq === b.beforeSeq && a.state === b.state && a.base === b.base

/**
 * The start and notes the session's last recorded step used, from its events (seq order), or undefined
 * when they hold no record. Notes are those recorded since the start's record named them (older ones
 * the layout leaves out itself).
 */
export function readWindowStart(events: readonly SessionEvent[]): WindowStart | undefined {
  let found: WindowStart | undefined
  for (const event of events) {
    if (event.type !== WINDOW_EVENT) continue
    const data = event.data ?? {}
    if (!Number.isSafeInteger(data.keepFrom) || data.keepFrom < 0) continue
    const notes: StateNote[] = Array.isArray(data.notes)
      ? data.notes.filter(isNote).map((note: StateNote) => ({ beforeSeq: note.beforeSeq, state: note.state, ...(note.base !== undefined ? { base: note.base } : {}) }))
      : []
    // A note recorded again (shown whole once its base was dropped) replaces the earlier record of it.
    const kept = (found?.notes ?? []).filter((note) => !notes.some((other) => other.beforeSeq === note.beforeSeq))
    found = { keepFrom: data.keepFrom, notes: [...kept, ...notes].sort((a, b) => a.beforeSeq - b.beforeSeq) }
  }
  return found
}

/** What a step records: undefined when its start and notes are the ones last known (nothing new). */
export function windowRecord(known: WindowStart | undefined, layout: WindowStart): { keepFrom: number, notes?: StateNote[] } | undefined {
  const added = layout.notes.filter((note) => !known?.notes.some((seen) => sameNote(seen, note)))
  if (known && known.keepFrom === layout.keepFrom && !added.length) return undefined
  return { keepFrom: layout.keepFrom, ...(added.length ? { notes: added } : {}) }
}

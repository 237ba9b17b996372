import type { Context } from 'cordis'
import type { Session } from '@taskward/host'
import type { SessionEvent } from '@taskward/protocol'
import { cut, shrink } from './context'
import { WINDOW_EVENT } from './window-record'

/**
 * The latest `size` events of the sessions a route serves, kept in memory from `session/event` so that
 * a step does not read the database again. A window that falls behind the session (another process
 * appended, or it was evicted) is read again from the database. Windows are kept for every session
 * that asked within `liveMs` (a live agent asks every step: 200 agents keep 200 windows) and for at
 * most `sessions` others, least recently used first out; each event's data is kept shrunk (`shrink`):
 * a window never holds a 1 MiB file read.
 */
export class EventWindows {
  /** In least recently used order. */
  private windows = new Map<string, { events: SessionEvent[], next: number, used: number }>()

  /**
   * `toolLimit`: the longest string kept in tool calls, results and host notes (they are shown cut at
   * that length anyway); `messageLimit`: the longest user or assistant text kept.
   */
  constructor(ctx: Context, private size: number, private toolLimit: number, private messageLimit: number, private sessions = 32, private liveMs = 60_000) {
    // An observer, not a `session/event` listener: a direct call on every append (see `sessions.observe`).
    ctx.sessions.observe((session, event) => {
      const window = this.windows.get(session.id)
      if (!window || event.seq !== window.next) return
      window.events.push(this.compact(event))
      window.next = event.seq + 1
      if (window.events.length > this.size) window.events.splice(0, window.events.length - this.size)
    })
    // A refused step's events are not in the log: a window holding any of them is read again.
    ctx.sessions.observeRollback((session, fromSeq) => {
      const window = this.windows.get(session.id)
      if (window && window.next > fromSeq) this.windows.delete(session.id)
    })
  }

  private compact(event: SessionEvent): SessionEvent {
    // The window's own record is read back whole (its notes are bounded by taskStateChars).
    if (event.type === WINDOW_EVENT) return event
    const conversation = event.type === 'user/message' || event.type === 'assistant/message'
    const data = shrink(event.data, conversation ? this.messageLimit : this.toolLimit)
    return { seq: event.seq, type: event.type, time: event.time, data: conversation ? data : this.capFields(data) }
  }

  /**
   * `shrink` bounds each string and each level's width, not the whole: 200 entries of 200 keys of cut
   * strings is still megabytes. A field of a tool event larger than twice what the model is ever shown
   * is kept as its JSON text, cut with the marker (the model sees at most `toolLimit` of it anyway).
   */
  private capFields(data: unknown): unknown {
    if (!data || typeof data !== 'object' || Array.isArray(data)) return data
    const out: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(data)) {
      const text = value !== null && typeof value === 'object' ? JSON.stringify(value) : undefined
      out[key] = text !== undefined && text.length > 2 * this.toolLimit ? cut(text, this.toolLimit) : value
    }
    return out
  }

  /** The latest events of `session` (at most `size`), and how many earlier ones were not read. */
  async latest(session: Session): Promise<{ events: SessionEvent[], unread: number }> {
    let window = this.windows.get(session.id)
    if (!window || window.next !== session.seq) {
      const from = Math.max(0, session.seq - this.size)
      const events = (await session.read({ from, limit: this.size })).map((event) => this.compact(event))
      window = { events, next: events.length ? events.at(-1)!.seq + 1 : from, used: 0 }
    }
    const now = Date.now()
    window.used = now
    this.windows.delete(session.id)
    this.windows.set(session.id, window)
    for (const [id, oldest] of this.windows) {
      if (this.windows.size <= this.sessions || now - oldest.used < this.liveMs) break
      this.windows.delete(id)
    }
    const events = [...window.events]
    return { events, unread: events.length ? events[0].seq : 0 }
  }
}

import type { Context } from 'cordis'
import type { Session } from '@taskward/host'
import type { SessionEvent } from '@taskward/protocol'

/**
 * The latest `size` events of the sessions a route serves, kept in memory from `session/event` so that
 * a step does not read the database again. A window that falls behind the session (another process
 * appended, or it was evicted) is read again from the database. At most `sessions` windows are kept.
 */
export class EventWindows {
  private windows = new Map<string, { events: SessionEvent[], next: number }>()

  constructor(ctx: Context, private size: number, private sessions = 64) {
    ctx.on('session/event', (session, event) => {
      const window = this.windows.get(session.id)
      if (!window || event.seq !== window.next) return
      window.events.push(event)
      window.next = event.seq + 1
      if (window.events.length > this.size) window.events.splice(0, window.events.length - this.size)
    })
  }

  /** The latest events of `session` (at most `size`), and how many earlier ones were not read. */
  async latest(session: Session): Promise<{ events: SessionEvent[], unread: number }> {
    let window = this.windows.get(session.id)
    if (!window || window.next !== session.seq) {
      const from = Math.max(0, session.seq - this.size)
      const events = await session.read({ from, limit: this.size })
      window = { events, next: events.length ? events.at(-1)!.seq + 1 : from }
      this.windows.delete(session.id)
      this.windows.set(session.id, window)
      while (this.windows.size > this.sessions) this.windows.delete(this.windows.keys().next().value!)
    }
    const events = [...window.events]
    return { events, unread: events.length ? events[0].seq : 0 }
  }
}

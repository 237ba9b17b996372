import type { Context } from 'cordis'
import { original, sharedStore, type Session } from '@taskward/host'
import { foldRepeat, judgeRepeat, pause, REPEAT_INIT, TOOL_REPEATED, type RepeatState, type SessionEvent } from '@taskward/protocol'
import type { Supervisor } from './service'

/** Sessions whose repeat state is kept in memory (least recently used out first; read again from the log). */
const KEPT = 1024
/** Events read back from the log for a session whose state is not in memory (after a restart). */
export const READ_BACK = 400
const LIVE = ['planning', 'awaiting-approval', 'active', 'reviewing']

/**
 * Repeated tool calls (the rule is protocol's `judgeRepeat`): the same tool with identical arguments
 * and an identical result `limit` times in a row is answered TOOL_REPEATED; called again after that,
 * the turn ends and a main session's task pauses with reason `loop`. A guard of the host's tools, fed by
 * the session observer, so both hosts count the same events the same way. Off with `limit` 0.
 */
export function registerRepeatGuard(ctx: Context, supervisor: Supervisor, limit: number) {
  if (!limit) return
  const sessions = original(ctx.sessions)
  const states = new Map<string, { state: RepeatState, next: number }>()
  const keep = (id: string, entry: { state: RepeatState, next: number }) => {
    states.delete(id)
    states.set(id, entry)
    if (states.size > KEPT) states.delete(states.keys().next().value!)
  }
  // Sessions whose log is being read back (see `readBack`), and the events appended meanwhile: folded
  // on top of what the read returns.
  const reading = new Map<string, Promise<void>>()
  const arriving = new Map<string, SessionEvent[]>()
  ctx.sessions.observe((session, event) => {
    const entry = states.get(session.id)
    // A session's first event, appended here: its state starts now, and its first turn reads nothing back
    // (not on a store other hosts write to: their appends would not be counted).
    if (!entry && event.seq === 0 && !reading.has(session.id) && !sharedStore(ctx)) return keep(session.id, { state: foldRepeat(REPEAT_INIT, event), next: 1 })
    if (!entry) return void arriving.get(session.id)?.push(event)
    // A gap (another writer, a missed event): read back from the log next time.
    if (event.seq !== entry.next) return void states.delete(session.id)
    entry.state = foldRepeat(entry.state, event)
    entry.next = event.seq + 1
  })
  ctx.sessions.observeRollback((session, fromSeq) => {
    const entry = states.get(session.id)
    if (entry && entry.next > fromSeq) states.delete(session.id)
  })
  // Reading the log back happens when a turn starts, or whenever nothing of the session is staged —
  // never while a step holds staged events: a read makes the MySQL store write them at once, and a step
  // refused afterwards (LEASE_LOST) would leave them in the log.
  const readBack = (session: Session) => {
    let read = reading.get(session.id)
    if (!read) {
      read = (async () => {
        states.delete(session.id)
        arriving.set(session.id, [])
        const from = Math.max(0, session.seq - READ_BACK)
        const events: SessionEvent[] = await session.read({ from, limit: READ_BACK })
        let state = events.reduce(foldRepeat, REPEAT_INIT)
        let next = events.length ? events.at(-1)!.seq + 1 : from
        for (const event of arriving.get(session.id) ?? []) {
          if (event.seq !== next) continue
          state = foldRepeat(state, event)
          next++
        }
        keep(session.id, { state, next })
      })().finally(() => {
        reading.delete(session.id)
        arriving.delete(session.id)
      })
      reading.set(session.id, read)
    }
    return read
  }
  ctx.on('agent/state', (agent: { state: string, session: Session }) => {
    const session = agent.session
    if (agent.state !== 'running' || states.get(session.id)?.next === session.seq) return
    // A session with no event yet (its first turn's message is its first event): nothing to read back.
    if (session.seq === 0 && !reading.has(session.id) && !sharedStore(ctx)) return keep(session.id, { state: REPEAT_INIT, next: 0 })
    readBack(session).catch(() => {})
  })
  const stateOf = async (session: Session): Promise<RepeatState> => {
    const current = () => {
      const entry = states.get(session.id)
      return entry && entry.next === session.seq ? entry : undefined
    }
    const pending = reading.get(session.id)
    if (pending) await pending.catch(() => {})
    let entry = current()
    if (!entry && session.whenDurable() === undefined) {
      // Nothing of the session is staged (no open step holds events; DSH stages nothing): the log may
      // be read now without writing anything early.
      await readBack(session)
      entry = current()
    }
    if (!entry) return REPEAT_INIT // lost in the middle of a turn: counted again from the next turn
    keep(session.id, entry)
    return entry.state
  }

  ctx.tools.guard(async ({ session, name, args }) => {
    const verdict = judgeRepeat(await stateOf(session), name, args, limit)
    if (verdict.kind === 'allow') return
    const times = `${name} was called ${verdict.count} times in a row with these same arguments and gave the same result each time`
    if (verdict.kind === 'repeated') {
      return {
        deny: {
          code: TOOL_REPEATED,
          message: `${times}; calling it again shows nothing new. Use the result above, or change the arguments `
            + '(a part of a file: read with offset and limit; grep for a line). Calling it again unchanged ends the turn and pauses the task (loop).',
          details: { tool: name, count: verdict.count },
        },
      }
    }
    // It goes on: the turn ends here, and a main session's task pauses (a person resumes it).
    let paused = false
    if (session.role === 'main') {
      const task = await supervisor.apply(session, (current, at) => current && LIVE.includes(current.phase) ? pause(current, { reason: 'loop' }, at) : current!)
        .catch(() => undefined)
      paused = task?.phase === 'paused' && task.pauseReason === 'loop'
    }
    ;(supervisor.mainAgent(session.id) ?? ctx.agents.get(session.id))?.cancel()
    return {
      deny: {
        code: TOOL_REPEATED,
        message: `${times}, and again after TOOL_REPEATED: the turn ends here${paused ? ' and the task is paused (loop)' : ''}. `
          + 'Nothing is lost: a person reads the log, then /task resume continues (with other instructions if need be).',
        details: { tool: name, count: verdict.count, loop: true },
      },
    }
  })
}

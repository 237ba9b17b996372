import { randomUUID } from 'node:crypto'
import type { DshAgent, DshEvent, DshUserMessage } from './dsh-types'
import { CARRIER_KIND, type CarriedEvent } from './carrier-read'

export { CARRIER_KIND, carrierOf, readCarried, type CarriedEvent } from './carrier-read'

/*
 * THE seam for Taskward's own events in a DSH log. DSH 0.1.0-rc.8 refuses to reopen a session whose
 * log holds an event type it does not know (and offers no way to write the `ignorable` marker it would
 * accept), so each Taskward event rides in an inbox insert that is removed again in the same tick:
 * `agent/inbox/spliced` is a type DSH knows, the message never reaches the model, and the log keeps
 * it. When DSH can append `ignorable` events, `writeCarried` / `readCarried` are all that change.
 *
 * Caveats (docs/dsh.md): it needs the session's live agent; DSH's consumed-work fold counts each
 * removed message as dropped work; the DSH web app may flash the queued message; a crash may keep the
 * inserts without the removal (below, `dropLeftoverCarriers`, `withoutCarriers`).
 */

/**
 * Append `events` to `agent`'s session, one DSH event each (so each gets its own seq, in order), then
 * one removal of all of them. Synchronous: no turn can claim them in between. Returns the DSH events
 * that carry them.
 */
export function writeCarried(agent: DshAgent, events: CarriedEvent[]): DshEvent[] {
  const start = agent.inbox.nextStep.length
  const carriers: DshEvent[] = []
  try {
    for (const [index, event] of events.entries()) {
      const message: DshUserMessage = {
        id: `taskward-${randomUUID()}`,
        role: 'user',
        content: [{ type: 'text', text: `[Taskward ${event.type}; carried in the log, never sent to the model]` }],
        source: { kind: CARRIER_KIND, session: agent.session.id, type: event.type, data: event.data },
      }
      agent.inbox.splice('next-step', start + index, 0, [message])
      carriers.push(agent.session.events[agent.session.seq - 1])
    }
  } finally {
    if (carriers.length) agent.inbox.splice('next-step', start, carriers.length, [])
  }
  return carriers
}

/*
 * DSH writes a batch of events as one zstd frame and, reading a torn final frame after a crash, keeps
 * its whole lines: a crash can keep a carrier batch's inserts and lose the removal after them. DSH
 * then reopens the session with those messages still queued in the agent's inbox, and its next step
 * would send them to the model as user messages. So a carrier is never a message: only a message
 * whose `source.kind` is CARRIER_KIND (a source nothing a model or DSH user controls sets) counts.
 */

/** Whether a queued message is a carrier. */
export function isCarrier(message: { source?: { kind?: unknown } } | undefined): boolean {
  return message?.source?.kind === CARRIER_KIND
}

/**
 * Remove the carriers a crash left queued in `agent`'s inbox (called when DSH creates an agent, before
 * anything can run a step or edit the queue), one removal per run of them. Their inserts stay in the
 * log, so the records they carry read as before. Returns how many were removed.
 */
export function dropLeftoverCarriers(agent: DshAgent): number {
  let dropped = 0
  for (const target of ['next-step', 'next-turn'] as const) {
    const queued = () => target === 'next-step' ? agent.inbox.nextStep : agent.inbox.nextTurn
    for (let end = queued().length; end > 0;) {
      if (!isCarrier(queued()[end - 1])) { end--; continue }
      let start = end - 1
      while (start > 0 && isCarrier(queued()[start - 1])) start--
      agent.inbox.splice(target, start, end - start, [])
      dropped += end - start
      end = start
    }
  }
  return dropped
}

/**
 * A step's `agent/pre-step` decision without carriers among the messages DSH would append as user
 * messages (the claimed inbox and the runtime context): whatever is still queued when a step claims
 * its input never reaches the model. Every other message is kept as it is.
 */
export function withoutCarriers<D>(decision: D): D {
  const messages = (decision as { messages?: unknown } | undefined)?.messages
  if (!Array.isArray(messages) || !messages.some(isCarrier)) return decision
  return { ...decision, messages: messages.filter((message) => !isCarrier(message)) }
}

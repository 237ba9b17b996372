import type { DshEvent } from './dsh-types'

/*
 * Reading a carrier (carrier.ts writes them): no Node import, so the panel's browser bundle reads the
 * same carriers for its milestone cards (adapters/dsh/client) as the adapter reads for its records.
 */

/** The `source.kind` of a carrier message. */
export const CARRIER_KIND = 'taskward.event'

/*
 * A carrier names the session it was written in (`source.session`): DSH copies a session's log into
 * another one (`session.fork`, the `subagent_fork` tool seed a child with the parent's events), and a
 * copy is not a record Taskward appended to that session. Nothing a model or a DSH user controls sets a
 * message's `source` (DSH's prompt, queue-edit and send_message paths fix it), so the kind and the
 * session id together mean "written by writeCarried for this session".
 */

export interface CarriedEvent {
  type: string
  data: unknown
}

/** A carrier's contents and the session it was written for (undefined: not a carrier). */
export function carrierOf(event: DshEvent): (CarriedEvent & { session: unknown }) | undefined {
  if (event.type !== 'agent/inbox/spliced') return
  // writeCarried's inserts remove nothing; a splice that also removes is DSH replacing a queued message
  // (session.updateQueue's edit keeps its `source`), never a record written now.
  if (event.data?.removedCount) return
  const inserted = event.data?.inserted
  if (!Array.isArray(inserted) || inserted.length !== 1) return
  const source = inserted[0]?.source
  if (source?.kind !== CARRIER_KIND || typeof source.type !== 'string') return
  return { session: source.session, type: source.type, data: source.data }
}

/**
 * The Taskward event a DSH event of session `sessionId` carries, or undefined when it carries none (a
 * carrier written for another session — a fork's or sub-agent's copy of its parent's log — carries
 * none here).
 */
export function readCarried(event: DshEvent, sessionId: string): CarriedEvent | undefined {
  const carried = carrierOf(event)
  if (!carried || carried.session !== sessionId) return
  return { type: carried.type, data: carried.data }
}

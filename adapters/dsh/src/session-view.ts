import { TaskwardError, type SessionEvent } from '@taskward/protocol'
import { readCarried, writeCarried } from './carrier'
import type { DshAgent, DshEvent, DshSession } from './dsh-types'
import { sharedData, SHARED_TYPES } from './shared-events'
import { STORE_DEADLINE_MS, storeDeadline } from './deadline'

/** DSH's own events appear to Taskward's folds under this prefix, so no DSH type is read as one of ours. */
export const DSH_TYPE_PREFIX = 'dsh:'

/**
 * One DSH event as Taskward's plugins see it: a carried event as itself; `user/message`,
 * `assistant/message`, `tool/call` and `tool/result` under their names with Taskward's data shape
 * (shared-events.ts: repair evidence cites them, and their quotes read as on our host); any other
 * under `dsh:<type>`. `eventAt(seq)` reads the session's earlier events (a tool result's call).
 */
export function viewEvent(event: DshEvent, sessionId: string, eventAt: (seq: number) => DshEvent | undefined = () => undefined): SessionEvent {
  const carried = readCarried(event, sessionId)
  if (carried) return { seq: event.seq, time: event.time, type: carried.type, data: carried.data }
  if (SHARED_TYPES.has(event.type)) return { seq: event.seq, time: event.time, type: event.type, data: sharedData(event, eventAt) }
  return { seq: event.seq, time: event.time, type: DSH_TYPE_PREFIX + event.type, data: event.data }
}

export interface SessionViewHost {
  agentOf(sessionId: string): DshAgent | undefined
  roleOf(session: DshSession): 'main' | 'reviewer' | 'subagent' | 'consultation'
  /** The session this one works for ('' for none). */
  parentOf(session: DshSession): string
  model: string
  /** DSH's `sessions.flush`: resolves once everything appended to the session is on disk. */
  flush(session: DshSession): Promise<unknown>
  /** How long a flush may take before the append is refused (the row's `storeDeadlineMs`; default `FLUSH_DEADLINE_MS`). */
  flushDeadlineMs?: number
  /** Called before Taskward's first record lands in a session (supervision-preset.ts). */
  beforeRecord?(session: DshSession): void
}

/** How long DSH's flush may take before an append is refused STORE_UNAVAILABLE (deadline.ts; the row's `storeDeadlineMs`). */
export const FLUSH_DEADLINE_MS = STORE_DEADLINE_MS

/**
 * Taskward's `Session` (docs/host.md) over one live DSH session. Seqs are DSH's own (one DSH event, one
 * seq); Taskward's events are written through the carrier (carrier.ts), so a batch of N events takes N
 * consecutive seqs followed by the carrier's removal event. DSH appends synchronously and keeps the
 * whole log in memory; its persistence writes behind (a 200 ms batching window in rc.8), so an append
 * resolves only after DSH's `flush` put it on disk, as an append on our host resolves once durable.
 */
export class SessionView {
  constructor(private readonly host: SessionViewHost, readonly dsh: DshSession) {}

  get id() { return this.dsh.id }
  get cwd() { return this.dsh.header.cwd ?? process.cwd() }
  get parentId() { return this.host.parentOf(this.dsh) }
  get role() { return this.host.roleOf(this.dsh) }
  get model() { return this.host.model }
  get preset() { return '' }
  get createdAt() { return this.dsh.header.createdAt }
  /** The seq the next append gets. */
  get seq() { return this.dsh.seq }

  async append<D = any>(type: string, data: D): Promise<SessionEvent<D>> {
    return (await this.appendBatch([{ type, data }]))[0]
  }

  async appendBatch<D = any>(entries: { type: string, data: D }[], options: { expectSeq?: number } = {}): Promise<SessionEvent<D>[]> {
    if (options.expectSeq !== undefined && options.expectSeq !== this.dsh.seq) {
      throw new TaskwardError('SEQ_CONFLICT', `Session ${this.id} moved on to seq ${this.dsh.seq} (expected ${options.expectSeq}); nothing was written. Read it again and retry.`)
    }
    if (!entries.length) return []
    const agent = this.host.agentOf(this.id)
    if (!agent) {
      throw new TaskwardError('SERVICE_UNAVAILABLE', `Session ${this.id} has no live DSH agent, which Taskward's records need (carrier.ts); open the session in DSH and retry.`)
    }
    // Through JSON, like an append on our host: the returned events are what a reader gets back.
    this.host.beforeRecord?.(this.dsh)
    const plain = entries.map(({ type, data }) => ({ type, data: JSON.parse(JSON.stringify(data ?? null)) }))
    const written = writeCarried(agent, plain).map((event) => viewEvent(event, this.id) as SessionEvent<D>)
    // Written synchronously (no turn claims the carrier in between), resolved once durable: what
    // follows a record — the reopened state after a repair receipt, the answer to a click, a queued
    // turn — never stands on a record a crash can still lose.
    await this.durable()
    return written
  }

  /**
   * Our kernel stages a model step's events until the step commits (docs/host.md); DSH appends each
   * event at once and never takes one back, so nothing here is ever waiting: undefined, as on our host
   * outside a step.
   */
  whenDurable(): Promise<boolean> | undefined { return undefined }

  /**
   * Our kernel may acknowledge a commit once written and flush it behind (`ack: 'written'`); every
   * append here resolves once durable (DSH's flush), whatever its options ask: nothing is left flushing.
   */
  flushed(): Promise<void> | undefined { return undefined }

  /** Everything appended to the session so far (DSH's events too) on disk: DSH's `flush`, bounded by the store deadline. */
  async durable() {
    // The events are in DSH's memory log already (it appends synchronously); what failed is the disk.
    await storeDeadline(Promise.resolve().then(() => this.host.flush(this.dsh)), {
      sessionId: this.id,
      deadlineMs: this.host.flushDeadlineMs ?? FLUSH_DEADLINE_MS,
      what: 'DSH\'s flush',
      codeFailures: true,
      advice: `DSH could not write session ${this.id} to disk ({why}); what was just recorded may be lost at a restart. `
        + 'Fix the disk or DSH\'s session storage, then check the session after restarting DSH.',
    })
  }

  /** One process drives a DSH session: nothing to catch up. */
  catchUp(_seenSeq: number) {}

  async read({ from = 0, limit = 500, types }: { from?: number, limit?: number, types?: readonly string[] } = {}): Promise<SessionEvent[]> {
    return this.readNow(from, limit, types)
  }

  readNow(from: number, limit: number, types?: readonly string[]): SessionEvent[] {
    const out: SessionEvent[] = []
    const events = this.dsh.events
    for (let seq = Math.max(0, from); seq < events.length && out.length < limit; seq++) {
      const event = viewEvent(events[seq], this.id, (at) => events[at])
      if (!types || types.includes(event.type)) out.push(event)
    }
    return out
  }

  page(from: number, limit: number, types?: readonly string[]) {
    return this.read({ from, limit, types })
  }

  async event(seq: number): Promise<SessionEvent | undefined> {
    const events = this.dsh.events
    const event = events[seq]
    return event && viewEvent(event, this.id, (at) => events[at])
  }

  async *events(from = 0, pageSize = 2000, options: { types?: readonly string[] } = {}): AsyncGenerator<SessionEvent> {
    for (let at = from; at < this.dsh.seq; at += pageSize) {
      for (const event of this.readNow(at, pageSize, undefined)) {
        if (!options.types || options.types.includes(event.type)) yield event
      }
    }
  }

  toJSON() {
    return { id: this.id, cwd: this.cwd, parentId: this.parentId, role: this.role, model: this.model, createdAt: this.createdAt, seq: this.seq }
  }
}

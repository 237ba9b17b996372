import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type {} from 'minato'
import { leaseOf, revokeLapsedLease, storeDriver, type Session } from '@taskward/host'
import { asTaskwardError, TaskwardError, type ErrorCode, type RepairBinding } from '@taskward/protocol'
import type { Config } from './config'
import type { ConfirmOutcome } from './confirm'

/**
 * A Confirm click taken by a host that does not drive the session, waiting in the shared store for
 * the host that does. States: `pending` → `claimed` (the driving host took it) → `answered`; or
 * `pending` → `withdrawn` (the clicking host gave up waiting: the driving host will not take it).
 */
export interface RepairClickRow {
  id: string
  sessionId: string
  /** The driving host the click was relayed to, as its lease names it; once claimed, the host that claimed it. */
  holder: string
  proposalId: string
  taskId: string
  revision: number
  state: 'pending' | 'claimed' | 'answered' | 'withdrawn'
  /** The driving host's decision (see `Answer`); null until answered. */
  answer: any
  /** When the clicking host relayed it (its own clock; informational). */
  requestedAt: number
}

declare module 'minato' {
  interface Tables {
    taskward_repair_click: RepairClickRow
  }
}

/** What the driving host decided: the click's outcome, or its refusal as the HTTP body would carry it. */
type Answer = { outcome: ConfirmOutcome } | { error: { code: string, message: string, details?: Record<string, unknown> } }

const TABLE = 'taskward_repair_click'

/** How often a host waiting on a claimed click reads the driving host's lease. */
const LEASE_READ_INTERVAL_MS = 1000

/**
 * How far hosts' clocks may differ. `requestedAt` is the clicking host's clock: a pending click older
 * than its timeout plus this was withdrawn, or its host died waiting — nobody waits for its answer.
 */
const CLOCK_SKEW_MS = 30_000

/** Rows of clicks nobody reads any more (a host killed while it waited) are removed after this. */
const ROW_LIFETIME_MS = 3_600_000
/** A claimed row is waited for while its claimer holds the lease (a long turn); after a day nobody is waiting. */
const CLAIMED_ROW_LIFETIME_MS = 86_400_000
const SWEEP_INTERVAL_MS = 60_000

/** Confirms a click on behalf of the driving host (`confirmRepair` with `relayed`: never relayed again). */
export type ConfirmHere = (sessionId: string, binding: RepairBinding) => Promise<ConfirmOutcome>

/**
 * Relays Confirm clicks between hosts sharing one MySQL/MariaDB store, through the store itself (no
 * host needs another's address or token). A host that does not hold the session's lease writes the
 * click — its binding, nothing decided — as a `taskward_repair_click` row and waits for the answer;
 * the host that drives the session polls for rows of the main sessions it drives, claims
 * each (a conditional update: a click is taken once, or withdrawn once, never both), confirms it in
 * its own maintenance window exactly as a click of its own, and writes the answer back. On SQLite
 * (one host) nothing polls and nothing is relayed. See docs/operations.md.
 */
export class ClickRelay {
  private polling = false
  /** The poll is failing (the store is down): logged once when it starts failing and once when it works again. */
  private pollFailing = false
  /** The first poll sweeps: rows left while no host ran are removed at the next start. */
  private sweptAt = 0

  constructor(private ctx: Context, private config: Config, private confirmHere: ConfirmHere) {
    ctx.database.extend(TABLE, {
      id: 'string',
      sessionId: 'string',
      holder: 'string',
      proposalId: 'string',
      taskId: 'string',
      revision: 'unsigned',
      state: 'string',
      answer: 'json',
      requestedAt: 'double',
    }, { primary: 'id', indexes: [{ name: 'taskward_repair_click_session', keys: { sessionId: 'asc', state: 'asc' } }] })
    ctx.setInterval(() => this.poll(), config.clickRelayPollInterval)
  }

  /** Whether other hosts may share the store (MySQL/MariaDB). */
  private get shared() {
    return typeof storeDriver(this.ctx)?.pool?.query === 'function'
  }

  /**
   * The click's answer as the driving host decides it. `held` is the `LEASE_HELD` refusal this host's
   * resume got, naming that host; it is what a click answers when nobody takes it in time.
   */
  async relay(main: Session, binding: RepairBinding, held: TaskwardError): Promise<ConfirmOutcome> {
    const holder = typeof held.details?.holder === 'string' ? held.details.holder : ''
    if (!this.shared || !holder) throw held
    const id = randomUUID()
    const { proposalId, taskId, revision } = binding
    await this.ctx.database.create(TABLE, { id, sessionId: main.id, holder, proposalId, taskId, revision, state: 'pending', answer: null, requestedAt: Date.now() })
    try {
      return await this.answerOf(id, main.id, holder)
    } finally {
      await this.ctx.database.remove(TABLE, { id }).catch(() => {})
    }
  }

  /**
   * `LEASE_HELD` naming the host whose lease on `main` is live now, for a click whose append this
   * host's (former) lease could no longer make; undefined when nobody holds a live lease.
   */
  async heldElsewhere(main: Session): Promise<TaskwardError | undefined> {
    const lease = await leaseOf(this.ctx, main.id)
    if (!lease || lease.expiresInMs <= 0) return undefined
    return new TaskwardError('LEASE_HELD',
      `Session ${main.id} is driven by host ${lease.holder}; its lease lapses in ${(lease.expiresInMs / 1000).toFixed(1)} s unless that host renews it.`,
      { sessionId: main.id, holder: lease.holder, expiresInMs: lease.expiresInMs })
  }

  private async answerOf(id: string, sessionId: string, relayedTo: string): Promise<ConfirmOutcome> {
    let holder = relayedTo
    const deadline = Date.now() + this.config.clickRelayTimeout
    let leaseReadAt = 0
    for (;;) {
      await this.ctx.sleep(this.config.clickRelayPollInterval)
      const [row] = await this.ctx.database.get(TABLE, { id })
      if (row?.state === 'answered') return settle(row.answer)
      if (!row || row.state === 'withdrawn') throw await this.unanswered(sessionId, holder, 'did not take this click')
      if (row.state === 'pending') {
        if (Date.now() < deadline) continue
        // Withdrawn only if still untaken: a click the driving host claimed meanwhile is waited for.
        const { matched } = await this.ctx.database.set(TABLE, { id, state: 'pending' }, { state: 'withdrawn' })
        if (matched) throw await this.unanswered(sessionId, holder, `did not take this click within ${(this.config.clickRelayTimeout / 1000).toFixed(1)} s`)
        continue
      }
      // Claimed: the driving host decides (it may wait for its agent to be idle). That is the host
      // that claimed it — the lease may have passed on since the click was relayed. It is alive while
      // it renews its lease; once the lease lapses or passes to another host, no answer will come.
      // Read once a second at most: renewals come seconds apart anyway.
      holder = row.holder || holder
      if (Date.now() - leaseReadAt < LEASE_READ_INTERVAL_MS) continue
      leaseReadAt = Date.now()
      const lease = await leaseOf(this.ctx, sessionId)
      if (lease && lease.holder === holder && lease.expiresInMs > 0) continue
      // A lapsed lease is fenced off before the user is told: a holder that was only frozen would
      // otherwise renew it on thawing and carry the click out long after this answer. If it renewed
      // first, it is alive after all: its answer is waited for.
      if (lease && lease.holder === holder && !await revokeLapsedLease(this.ctx, sessionId, lease)) continue
      throw new TaskwardError('LEASE_HELD',
        `Host ${holder} took this click for session ${sessionId} but lost its lease before it answered, so it can no longer carry it out; this host wrote nothing. `
        + 'Reload the repairs to see whether the repair was applied, and click again if it is still pending (this host then drives the session).',
        { sessionId, holder, expiresInMs: 0 })
    }
  }

  /** `LEASE_HELD` for a click the driving host did not take: naming it, and what to do. */
  private async unanswered(sessionId: string, holder: string, what: string) {
    const lease = await leaseOf(this.ctx, sessionId).catch(() => undefined)
    const current = lease && lease.expiresInMs > 0 ? lease : undefined
    const lapse = current ? `its lease lapses in ${(current.expiresInMs / 1000).toFixed(1)} s unless it renews it` : 'its lease has lapsed'
    return new TaskwardError('LEASE_HELD',
      `Session ${sessionId} is driven by host ${current?.holder ?? holder}, which ${what} (it may be hung or overloaded); nothing was written. `
      + `Retry the click, or wait until ${lapse}: then the host you click on takes the session over and decides the click itself.`,
      { sessionId, holder: current?.holder ?? holder, expiresInMs: current?.expiresInMs ?? 0 })
  }

  /** Take the clicks relayed to the main sessions this host drives (their agents run here, under the current lease). */
  private async poll() {
    if (this.polling || !this.shared) return
    this.polling = true
    try {
      const now = Date.now()
      // Every host sweeps the whole table: a row's session may be driven by no host any more.
      if (now - this.sweptAt >= SWEEP_INTERVAL_MS) {
        this.sweptAt = now
        await this.ctx.database.remove(TABLE, { $or: [
          { state: { $ne: 'claimed' }, requestedAt: { $lt: now - ROW_LIFETIME_MS } },
          { state: 'claimed', requestedAt: { $lt: now - CLAIMED_ROW_LIFETIME_MS } },
        ] })
      }
      const live = new Map(this.ctx.agents.list().filter((agent) => agent.session.role === 'main').map((agent) => [agent.session.id, agent.session]))
      if (!live.size) return
      const sessionIds = [...live.keys()]
      // A click made long ago by a host that died waiting is not carried out: nobody would get its answer.
      const rows = await this.ctx.database.get(TABLE, {
        sessionId: { $in: sessionIds }, state: 'pending', requestedAt: { $gte: now - this.config.clickRelayTimeout - CLOCK_SKEW_MS },
      })
      const drives = new Map<string, Promise<string | undefined>>()
      for (const row of rows) {
        // A live agent is not enough: one that lost its lease (its host was paused) must leave the
        // click to the host that took it — which may be where the click was made. The token grows on
        // every take, so only the current holder's fence has the lease row's token.
        const session = live.get(row.sessionId)!
        let current = drives.get(row.sessionId)
        if (!current) drives.set(row.sessionId, current = leaseOf(this.ctx, row.sessionId).then((lease) => lease && lease.token === session.fence?.token ? lease.holder : undefined))
        // Each is decided on its own: the clicks of one session queue on its repair lock like local ones.
        const self = await current
        if (self) void this.decide(row, self)
      }
      if (this.pollFailing) this.ctx.logger('repair').info('reading the relayed Confirm clicks works again')
      this.pollFailing = false
    } catch (error: any) {
      // Polled ten times a second: a store that is down would otherwise fill the log.
      if (!this.pollFailing) this.ctx.logger('repair').warn('could not read the relayed Confirm clicks (logged once until it works again): %s', error?.message ?? error)
      this.pollFailing = true
    } finally {
      this.polling = false
    }
  }

  /** Claim `row` as `self` (this host, as its lease names it: the clicking host then waits on this host's lease) and answer it. */
  private async decide(row: RepairClickRow, self: string) {
    try {
      const { matched } = await this.ctx.database.set(TABLE, { id: row.id, state: 'pending' }, { state: 'claimed', holder: self })
      if (!matched) return
      let answer: Answer
      try {
        answer = { outcome: await this.confirmHere(row.sessionId, { proposalId: row.proposalId, taskId: row.taskId, revision: row.revision }) }
      } catch (error) {
        const refusal = asTaskwardError(error)
        answer = { error: { code: refusal.code, message: refusal.message, ...refusal.details ? { details: refusal.details } : {} } }
      }
      await this.ctx.database.set(TABLE, { id: row.id, state: 'claimed' }, { state: 'answered', answer })
    } catch (error: any) {
      this.ctx.logger('repair').warn('could not answer the relayed Confirm click %s of session %s: %s', row.id, row.sessionId, error?.message ?? error)
    }
  }
}

/** The driving host's answer as this host's own: the outcome, or the same refusal (code, message, details). */
function settle(answer: Answer): ConfirmOutcome {
  if (answer && 'outcome' in answer) return answer.outcome
  const error = answer?.error
  if (!error?.code) throw new TaskwardError('INTERNAL', 'The driving host answered the click with nothing readable; reload the repairs and click again.')
  throw new TaskwardError(error.code as ErrorCode, error.message, error.details)
}

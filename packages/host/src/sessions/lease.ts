import type { Context } from 'cordis'
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import { readFileSync, readlinkSync } from 'node:fs'
import { storeUnavailable, TaskwardError } from '@taskward/protocol'
import { storeDriver } from '../store/health'
import type { Session } from './session'
import { catchUpWithStore } from './catch-up'

export interface LeaseConfig {
  /** How long a lease lasts without renewal (ms). */
  leaseDuration: number
  /** How often the holder renews it (ms); well under `leaseDuration`. */
  leaseRenewInterval: number
}

/** The lease an append carries: the store refuses the insert unless the lease row still has this token and has not expired. */
export interface Fence {
  token: number
}

/**
 * Where this process's pids mean something (Linux): the kernel's boot id and this pid namespace. Two
 * holders with the same host name and tag see the same processes, so one may tell whether the other's
 * pid still runs. Undefined elsewhere: then a killed holder's lease is only ever waited out.
 */
function processScope(): string | undefined {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replace(/-/g, '').slice(0, 12)
    const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1]
    return /^[0-9a-f]{12}$/.test(boot) && namespace ? `${boot}.${namespace}` : undefined
  } catch {
    return undefined
  }
}

const HOST_NAME = hostname().slice(0, 120)
const SCOPE = processScope()
const HOLDER = /^(\d+)@(.*) in (\S+) started /

/** Whether `pid` runs (a process of another user counts: EPERM). */
function running(pid: number) {
  try {
    process.kill(pid, 0)
    return true
  } catch (error: any) {
    return error?.code === 'EPERM'
  }
}

/**
 * Whether `holder` names a process of this machine and pid namespace that no longer runs (a host
 * killed without releasing): its lease protects nobody, so it may be taken at once. A holder that
 * runs — even stopped with SIGSTOP — or that cannot be placed is never taken before it lapses.
 */
export function holderGone(holder: string): boolean {
  const match = HOLDER.exec(holder)
  if (!match || !SCOPE) return false
  const pid = Number(match[1])
  return match[2] === HOST_NAME && match[3] === SCOPE && pid !== process.pid && pid > 1 && !running(pid)
}

/** The store's clock in ms: every host compares expiries against the same clock, whatever its own says. */
const NOW_MS = 'ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)'

/**
 * On MySQL/MariaDB (several hosts on one store) a main session's agent runs on one host at a time:
 * a `taskward_lease` row names the holder, its expiry (the store's clock) and a fencing token that only
 * grows. The holder renews it; another host's resume refuses with `LEASE_HELD` until it lapses, and
 * every append of the holder carries the token (see `Fence`), so a host that lost the lease cannot
 * append. On SQLite one host owns the data directory (its lock): `enabled` is false and nothing runs.
 */
export class SessionLeases {
  /**
   * This host: pid@hostname, where its pids mean something (see `processScope`), when it started, and a
   * nonce (two test hosts may share a process).
   */
  readonly holder = `${process.pid}@${HOST_NAME} in ${SCOPE ?? 'unknown'} started ${new Date().toISOString()} #${randomBytes(3).toString('hex')}`
  private readonly held = new Map<string, { session: Session, token: number, stop: () => void }>()
  private readonly acquiring = new Map<string, Promise<void>>()

  /** Taken at start: at dispose the logger service may already be gone. */
  private readonly logger

  constructor(private ctx: Context, private config: LeaseConfig) {
    this.logger = ctx.logger('sessions')
    // A renewal slower than the lease would let it lapse between renewals: renew at a third at most.
    if (config.leaseRenewInterval * 3 > config.leaseDuration) {
      const renew = Math.floor(config.leaseDuration / 3)
      this.logger.warn('agents.leaseRenewInterval %d ms is too long for agents.leaseDuration %d ms; renewing every %d ms', config.leaseRenewInterval, config.leaseDuration, renew)
      this.config = { ...config, leaseRenewInterval: renew }
    }
  }

  private get driver() {
    const driver = storeDriver(this.ctx)
    return typeof driver?.pool?.query === 'function' ? driver : undefined
  }

  get enabled() {
    return !!this.driver
  }

  private async query(sql: string, values: any[]): Promise<any> {
    await this.ctx.database.prepared()
    return this.send(sql, values)
  }

  /** The query goes out now, without waiting a turn: at dispose the pool closes right after. */
  private send(sql: string, values: any[]): Promise<any> {
    const driver = this.driver
    if (!driver) return Promise.reject(new TaskwardError('STORE_UNAVAILABLE', 'The database is not open; start the host again.'))
    const sent = new Promise((resolve, reject) => {
      driver.pool.query(sql, values, (error: any, results: any) => error ? reject(storeUnavailable(error, driver.storeName ?? 'MySQL/MariaDB')) : resolve(results))
    })
    // The driver closes its pool only once these settled (plugins/database's TaskwardMySQLDriver).
    const pending: Set<Promise<unknown>> | undefined = driver.lastWrites
    if (pending) {
      pending.add(sent)
      const done = () => { pending.delete(sent) }
      sent.then(done, done)
    }
    return sent
  }

  /**
   * Take (or renew) the lease of `session` for this host, or refuse with `LEASE_HELD` naming the
   * holder and when its lease lapses. The token grows on every take, so a former holder's appends fail.
   */
  acquire(session: Session): Promise<void> {
    if (!this.enabled) return Promise.resolve()
    // One take at a time per session on this host: two resumes at once must not refuse each other.
    const id = session.id
    const next = (this.acquiring.get(id) ?? Promise.resolve()).catch(() => {}).then(() => this.take(session))
    this.acquiring.set(id, next)
    const settled = () => { if (this.acquiring.get(id) === next) this.acquiring.delete(id) }
    next.then(settled, settled)
    return next
  }

  private async take(session: Session): Promise<void> {
    const id = session.id
    const duration = this.config.leaseDuration
    const mine = this.held.get(id)
    if (mine && await this.renew(id, mine.token)) return
    await this.query(`INSERT IGNORE INTO \`taskward_lease\` (\`sessionId\`, \`holder\`, \`expiresAt\`, \`token\`) VALUES (?, '', 0, 0)`, [id])
    const taken = await this.query(
      `UPDATE \`taskward_lease\` SET \`holder\` = ?, \`expiresAt\` = ${NOW_MS} + ?, \`token\` = \`token\` + 1 WHERE \`sessionId\` = ? AND \`expiresAt\` <= ${NOW_MS}`,
      [this.holder, duration, id])
    let [row]: any[] = await this.query(`SELECT \`holder\`, \`token\`, \`expiresAt\` - ${NOW_MS} AS \`remaining\` FROM \`taskward_lease\` WHERE \`sessionId\` = ?`, [id])
    if ((!taken.affectedRows || row?.holder !== this.holder) && row?.holder && holderGone(row.holder)) {
      // The holder was killed on this machine (its pid is gone): take its lease now, if it is still
      // exactly that holder's (another host may take it first).
      const stolen = await this.query(
        `UPDATE \`taskward_lease\` SET \`holder\` = ?, \`expiresAt\` = ${NOW_MS} + ?, \`token\` = \`token\` + 1 WHERE \`sessionId\` = ? AND \`holder\` = ? AND \`token\` = ?`,
        [this.holder, duration, id, row.holder, row.token])
      if (stolen.affectedRows) this.logger.info('took over the lease of session %s from %s, which no longer runs', id, row.holder)
      // Read again either way: a refusal must name whoever won a race for the lease, not the dead holder.
      ;[row] = await this.query(`SELECT \`holder\`, \`token\`, \`expiresAt\` - ${NOW_MS} AS \`remaining\` FROM \`taskward_lease\` WHERE \`sessionId\` = ?`, [id])
      if (stolen.affectedRows && row?.holder === this.holder) return this.holdTaken(session, Number(row.token))
    }
    if (!taken.affectedRows || row?.holder !== this.holder) throw leaseHeld(id, row?.holder, Number(row?.remaining ?? 0))
    await this.holdTaken(session, Number(row.token))
  }

  /**
   * Hold a lease just taken: first bring the session's seq up to the log's tail — the host that held
   * it before may have appended (this process sees only its own appends), and every check of this
   * host's next steps compares against that seq.
   */
  private async holdTaken(session: Session, token: number) {
    this.hold(session, token)
    try {
      await catchUpWithStore(this.ctx, session)
    } catch (error) {
      // Not held on a seq that may be behind (the next take would only renew it, never catching up):
      // let it go, so that the next take takes it again — here, or on another host.
      await this.release(session.id).catch(() => {})
      throw error
    }
  }

  private hold(session: Session, token: number) {
    this.held.get(session.id)?.stop()
    session.fence = { token }
    const stop = this.ctx.setInterval(() => {
      this.renew(session.id, token).then((renewed) => {
        this.renewalAnswered()
        if (!renewed) {
          this.logger.warn('lost the lease of session %s (token %d): its appends now fail with LEASE_LOST', session.id, token)
          this.forget(session.id, token)
        }
      }, (error) => this.renewalFailed(session.id, error))
    }, this.config.leaseRenewInterval)
    this.held.set(session.id, { session, token, stop })
  }

  /**
   * Whether renewals are failing now (the store is down): every held session's renewal fails each
   * interval during an outage, so it is said once when it starts and once when renewals work again.
   */
  private renewalsFailing = false

  private renewalFailed(id: string, error: any) {
    if (this.renewalsFailing) return
    this.renewalsFailing = true
    this.logger.warn('could not renew the lease of session %s (and the others held here, until the store answers): %s', id, error?.message ?? error)
  }

  private renewalAnswered() {
    if (!this.renewalsFailing) return
    this.renewalsFailing = false
    this.logger.info('lease renewals work again')
  }

  /**
   * Extend the lease while it is still ours; false once another host took it (or released it here).
   * The token changes only when a host takes the lease, so an unchanged token means nobody drove the
   * session meanwhile: a lease that lapsed while this host was paused is safe to extend (appends made
   * while it was lapsed were refused all the same).
   */
  private async renew(id: string, token: number) {
    const result = await this.query(
      `UPDATE \`taskward_lease\` SET \`expiresAt\` = ${NOW_MS} + ? WHERE \`sessionId\` = ? AND \`token\` = ? AND \`holder\` = ? AND \`expiresAt\` > 0`,
      [this.config.leaseDuration, id, token, this.holder])
    return result.affectedRows > 0
  }

  /** Stop renewing; the session keeps its (now stale) fence, so appends keep failing until a new acquire. */
  private forget(id: string, token: number) {
    const entry = this.held.get(id)
    if (entry?.token !== token) return
    entry.stop()
    this.held.delete(id)
  }

  /** Whether this host holds (and renews) the lease of `id`. */
  holds(id: string) {
    return this.held.has(id)
  }

  /** Give the lease up at once (the agent stopped): another host may resume without waiting for it to lapse. */
  async release(id: string) {
    const entry = this.held.get(id)
    if (!entry) return
    this.forget(id, entry.token)
    // Held, so the table exists: sent at once (see `send`).
    await this.send(`UPDATE \`taskward_lease\` SET \`expiresAt\` = 0 WHERE \`sessionId\` = ? AND \`token\` = ? AND \`holder\` = ?`, [id, entry.token, this.holder])
  }

  /** Every lease this host holds, released (on dispose). */
  async releaseAll(): Promise<void> {
    // Every release is sent synchronously, before the first await.
    await Promise.all([...this.held.keys()].map((id) => this.release(id).catch((error) => {
      this.logger.warn('could not release the lease of session %s: %s', id, error?.message ?? error)
    })))
  }
}

/** `LEASE_HELD` for a resume (or create) of session `id`, which host `holder` drives for `remainingMs` more. */
export function leaseHeld(id: string, holder: string | undefined, remainingMs: number) {
  const remaining = Math.max(0, Math.ceil(remainingMs))
  return new TaskwardError('LEASE_HELD',
    `Session ${id} is driven by host ${holder ?? 'unknown'}; its lease lapses in ${(remaining / 1000).toFixed(1)} s unless that host renews it. Resume it there, or retry once the lease lapses.`,
    { sessionId: id, holder, expiresInMs: remaining })
}

/** A session's lease as the store holds it now (see `leaseOf`). */
export interface LeaseView {
  holder: string
  token: number
  /** Until it lapses, on the store's clock; 0 or less once lapsed (or released). */
  expiresInMs: number
}

/** One statement on the shared store; undefined on SQLite (no leases there). */
async function leaseQuery(ctx: Context, sql: string, values: unknown[]): Promise<any> {
  const driver = storeDriver(ctx)
  if (typeof driver?.pool?.query !== 'function') return undefined
  await ctx.database.prepared()
  return new Promise((resolve, reject) => {
    driver.pool.query(sql, values, (error: any, results: any) => error ? reject(error) : resolve(results))
  })
}

/**
 * Who drives `sessionId` now, read from the store (MySQL/MariaDB): for a host that does not hold
 * the lease and waits on the one that does. Undefined on SQLite, or when nobody ever took it.
 */
export async function leaseOf(ctx: Context, sessionId: string): Promise<LeaseView | undefined> {
  const rows: any[] | undefined = await leaseQuery(ctx,
    `SELECT \`holder\`, \`token\`, \`expiresAt\` - ${NOW_MS} AS \`remaining\` FROM \`taskward_lease\` WHERE \`sessionId\` = ?`, [sessionId])
  const [row] = rows ?? []
  if (!row?.holder) return undefined
  return { holder: row.holder, token: Number(row.token), expiresInMs: Math.ceil(Number(row.remaining)) }
}

/**
 * Fence off `lease` once it lapsed, for a host that waited on its holder and now tells the user that
 * holder will not act: the token grows, so the holder — frozen, not dead — can neither renew it nor
 * append when it thaws (a lapsed lease whose token is unchanged is otherwise renewed, see `renew`).
 * Anyone may take the session afterwards, as after any lapse. False when it is no longer exactly
 * that lapsed lease: its holder renewed it meanwhile (it is alive) or another host took it.
 */
export async function revokeLapsedLease(ctx: Context, sessionId: string, lease: LeaseView): Promise<boolean> {
  const result = await leaseQuery(ctx,
    `UPDATE \`taskward_lease\` SET \`token\` = \`token\` + 1 WHERE \`sessionId\` = ? AND \`holder\` = ? AND \`token\` = ? AND \`expiresAt\` <= ${NOW_MS}`,
    [sessionId, lease.holder, lease.token])
  return result?.affectedRows > 0
}

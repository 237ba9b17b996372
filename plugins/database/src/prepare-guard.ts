import type { Context } from 'cordis'
import { isStoreUnavailable, TaskwardError } from '@taskward/protocol'

const ORIGINAL = Symbol.for('cordis.original')

/** The least time between two tries of a failed table preparation. */
const PREPARE_RETRY_MS = 1000

interface Model {
  prepare(name: string): Promise<void>
  prepared(): Promise<void>
  getDriver(table: unknown): unknown
  prepareTasks: Record<string, Promise<void>>
}

/** Where `/health` (packages/host, store/health.ts) finds the tables refused for a broken preparation. */
export const PREPARATION_FAILURES = Symbol.for('taskward.store.preparationFailures')

/** The driver methods a selection runs (minato's `Executable.execute`). */
const QUERIES = new Set(['get', 'eval', 'set', 'remove', 'create', 'upsert'])

/** A preparation that failed because the store is down (or already said what is wrong with all of it). */
function isOutage(error: unknown) {
  return isStoreUnavailable(error) || (TaskwardError.is(error) && error.code.startsWith('STORE_'))
}

/**
 * minato prepares a table (its DDL, then its indexes) when it is declared and again when a driver
 * starts, keeping the promise in `prepareTasks` — and every query awaits all of them. A prepare that
 * fails after the host is up (the store dropped its connection, refused the login, its file moved
 * away) would reject with nobody awaiting it — an unhandled rejection, which ends the process — and
 * then fail every later query of every table, forever. Guarded here: a failed prepare is remembered
 * instead of rejecting, and what happens next depends on why it failed:
 * - the store is down (`isStoreUnavailable`, or the driver's own `STORE_*` refusal): logged once per
 *   outage; the next query — and `/health` — prepares it again first (at most once a second), and
 *   refuses `STORE_UNAVAILABLE` (or the driver's code) naming the table while it still fails;
 * - anything else (a migration the rows already in the table break, a definition the store refuses):
 *   asking again will not help, so it is not retried, and only that table is refused — its queries
 *   answer `STORE_CORRUPT` naming the table and the store's own error, `/health` says so, and every
 *   other table (and the lease queries) is served. Declaring the table again (a fixed plugin) retries.
 */
export function guardTablePreparation(ctx: Context, store: () => string) {
  const proxy = ctx.get('model') as unknown as Model | undefined
  if (!proxy) return
  const model = ((proxy as any)[ORIGINAL] ?? proxy) as Model
  const prepare = model.prepare.bind(model)
  const prepared = model.prepared.bind(model)
  const getDriver = model.getDriver.bind(model)
  const failed = new Map<string, unknown>()
  const broken = new Map<string, TaskwardError>()
  const preparing = new Map<string, number>()
  const logger = ctx.logger('database')
  model.prepare = (name: string) => {
    broken.delete(name)
    preparing.set(name, (preparing.get(name) ?? 0) + 1)
    const settled = () => preparing.get(name)! > 1 ? preparing.set(name, preparing.get(name)! - 1) : preparing.delete(name)
    return prepare(name).finally(settled).then(() => {
      if (failed.delete(name)) logger.info('table %s is prepared again', name)
    }, (error) => {
      if (!isOutage(error)) {
        failed.delete(name)
        const refusal = brokenTable(store(), name, error)
        broken.set(name, refusal)
        logger.error(refusal.message)
        return
      }
      if (!failed.size) logger.warn('could not prepare table %s; queries answer STORE_UNAVAILABLE until it is (%s)', name, (error as Error)?.message ?? error)
      failed.set(name, error)
    })
  }
  // minato resolves a table's driver for every selection (get, create, set, remove, upsert, eval):
  // the one place a query names its table. A table found broken is refused there. A table still being
  // prepared may turn out broken, so each driver's query methods are wrapped once (in place) to look
  // again when they run (`execute` awaits `prepared()` first). The driver object itself is handed out
  // unchanged: minato groups a transaction's drivers and checks a join's by identity, and calls them
  // with the transaction's session as `this`.
  const guarded = new WeakSet<object>()
  const guard = (driver: Record<string, unknown>) => {
    guarded.add(driver)
    for (const key of QUERIES) {
      const query = driver[key]
      if (typeof query !== 'function') continue
      driver[key] = function (this: unknown, ...args: unknown[]) {
        for (const table of tablesOf(args[0])) {
          const late = broken.get(table)
          if (late) throw late
        }
        return query.apply(this, args)
      }
    }
  }
  model.getDriver = (table: unknown) => {
    if (typeof table === 'string') {
      const refusal = broken.get(table)
      if (refusal) throw refusal
    }
    const driver = getDriver(table)
    if (driver && typeof driver === 'object' && !guarded.has(driver)) guard(driver as Record<string, unknown>)
    return driver
  }
  Object.defineProperty(model, PREPARATION_FAILURES, { value: () => [...broken.values()], configurable: true })
  // One retry at a time, shared by the queries that arrive meanwhile, and at most one a second:
  // pollers query ten times a second, and each retry is DDL (and a log line) against a store that is down.
  let retry: Promise<void> | undefined
  let retriedAt = 0
  const again = async () => {
    if (!retry && Date.now() - retriedAt >= PREPARE_RETRY_MS) {
      retriedAt = Date.now()
      retry = Promise.all([...failed.keys()].map((name) => model.prepareTasks[name] = model.prepare(name))).then(() => {}).finally(() => retry = undefined)
    }
    await retry
    if (!failed.size) return
    const [name, error] = failed.entries().next().value!
    if (TaskwardError.is(error)) throw error
    const cause = (error as { code?: unknown })?.code
    throw new TaskwardError('STORE_UNAVAILABLE',
      `The store (${store()}) could not prepare table ${name}: ${(error as Error)?.message ?? error}. This request did not complete; `
      + 'make it again once the store answers (GET /health says when).',
      { table: name, ...typeof cause === 'string' ? { cause } : {} })
  }
  // Every query awaits this: one synchronous check after minato's own wait while every table is
  // prepared (including a preparation that failed during that wait).
  model.prepared = () => prepared().then(() => failed.size ? again() : undefined)
}

/** The tables a selection reads or writes: its own, or those of the selections it joins. */
function tablesOf(selection: unknown, depth = 0): string[] {
  const table = (selection as { table?: unknown } | undefined)?.table
  if (typeof table === 'string') return [table]
  if (!table || typeof table !== 'object' || depth > 4) return []
  // A subquery (a selection as the table) or a join (a record of selections); nothing else is walked.
  if ('table' in table) return tablesOf(table, depth + 1)
  return Object.values(table as Record<string, unknown>)
    .flatMap((inner) => inner && typeof inner === 'object' && 'table' in inner ? tablesOf(inner, depth + 1) : [])
}

/** The refusal of a table whose preparation failed for a reason other than an outage. */
function brokenTable(store: string, name: string, error: unknown) {
  const cause = (error as { code?: unknown })?.code
  return new TaskwardError('STORE_CORRUPT',
    `The store (${store}) could not prepare table ${name}: ${(error as Error)?.message ?? error}. The store answers; the table's `
    + 'rows or its definition (a plugin\'s model) do not fit, so making the request again will not help: fix the table or the plugin, '
    + 'then restart the host. Other tables are served.',
    { table: name, ...typeof cause === 'string' ? { cause } : {} })
}

import type { Context } from 'cordis'
import type {} from 'minato'

export type StoreHealth = { ok: true } | { ok: false, code: 'STORE_CORRUPT' | 'STORE_UNAVAILABLE', error: string }

const ORIGINAL = Symbol.for('cordis.original')
/** Set by plugins/database (prepare-guard.ts): the refusals of tables whose preparation is broken. */
const PREPARATION_FAILURES = Symbol.for('taskward.store.preparationFailures')

const STORE = Symbol.for('cordis.store')
const ISOLATE = Symbol.for('cordis.isolate')
const INTERNAL = Symbol.for('cordis.internal')

/**
 * The database service, as `ctx.get('database')` finds it (cordis 3: the service's key in the context's
 * isolate table, its value in the store) without wrapping it in a new tracing proxy: that `get` costs
 * ~12 µs a call, and the hot paths ask once per new session. Anything not as expected asks `ctx.get`.
 */
function databaseService(ctx: Context): unknown {
  const tables = ctx as any
  if (tables[INTERNAL]?.database?.type === 'service') {
    const key = tables[ISOLATE]?.database
    const value = key === undefined ? undefined : tables[STORE]?.[key]?.value
    if (value !== undefined && value !== null) return value
  }
  return ctx.get('database')
}

/**
 * The driver behind `ctx.database` (minato keeps it on the service object), unwrapped from cordis'
 * tracing proxy: every property read through that proxy costs more than an insert on the hot path.
 * Where the database service is at hand, `driverOf` it.
 */
export function storeDriver(ctx: Context): any {
  return driverOf(databaseService(ctx))
}

/**
 * Whether other hosts may write to this store too (MySQL/MariaDB, "Several hosts" in docs/operations.md):
 * then this process's appends are not all of a session's events, and what it folds from them alone (an
 * index started at a session's first event) may miss another host's.
 */
export function sharedStore(ctx: Context): boolean {
  return typeof storeDriver(ctx)?.pool?.query === 'function'
}

/** The driver of a database service (as `ctx.database`, or the object itself), unwrapped as `storeDriver` does. */
export function driverOf(database: unknown): any {
  const service = database as any
  const driver = service?._driver ?? service?.drivers?.[0]
  return driver?.[ORIGINAL] ?? driver
}

/**
 * Whether the store answers: the driver's own check where it has one (the SQLite driver remembers
 * run-time failures and notices its file being removed or replaced; the MySQL driver asks the server).
 * `/health` answers 503 with this when it fails.
 */
export async function storeHealth(ctx: Context): Promise<StoreHealth> {
  const driver = storeDriver(ctx)
  if (!driver) return { ok: false, code: 'STORE_UNAVAILABLE', error: 'The database is not open.' }
  try {
    const health = typeof driver.health === 'function' ? await driver.health() : { ok: true }
    if (!health.ok) return { ok: false, code: health.code ?? 'STORE_UNAVAILABLE', error: health.message ?? 'The database failed.' }
  } catch (error: any) {
    return { ok: false, code: 'STORE_UNAVAILABLE', error: `The database does not answer: ${error?.message ?? error}` }
  }
  try {
    // A table whose preparation failed (the store was down when it ran) is prepared again here —
    // after the driver's own check, which lifts a failure that has passed — and answers
    // STORE_UNAVAILABLE while it still fails (plugins/database, prepare-guard.ts).
    await (ctx.get('database') as any)?.prepared?.()
  } catch (error: any) {
    return { ok: false, code: error?.code === 'STORE_CORRUPT' ? 'STORE_CORRUPT' : 'STORE_UNAVAILABLE', error: error?.message ?? String(error) }
  }
  // A table whose preparation failed for another reason (its rows break a migration, the store refuses
  // its definition) is refused alone, STORE_CORRUPT; the store itself answers.
  const model = (ctx.get('model') ?? ctx.get('database')) as any
  const broken: { message: string }[] = (model?.[ORIGINAL] ?? model)?.[PREPARATION_FAILURES]?.() ?? []
  if (broken.length) return { ok: false, code: 'STORE_CORRUPT', error: broken.map((refusal) => refusal.message).join(' ') }
  return { ok: true }
}

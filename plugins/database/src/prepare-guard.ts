import type { Context } from 'cordis'
import { TaskwardError } from '@taskward/protocol'

const ORIGINAL = Symbol.for('cordis.original')

/** The least time between two tries of a failed table preparation. */
const PREPARE_RETRY_MS = 1000

interface Model {
  prepare(name: string): Promise<void>
  prepared(): Promise<void>
  prepareTasks: Record<string, Promise<void>>
}

/**
 * minato prepares a table (its DDL, then its indexes) when it is declared and again when a driver
 * starts, keeping the promise in `prepareTasks` — and every query awaits all of them. A prepare that
 * fails after the host is up (the store dropped its connection, refused the login, its file moved
 * away) would reject with nobody awaiting it — an unhandled rejection, which ends the process — and
 * then fail every later query of every table, forever. Guarded here: a failed prepare is remembered
 * (logged once per outage) instead of rejecting; the next query — and `/health` — prepares it again
 * first, and refuses `STORE_UNAVAILABLE` naming the table while it still fails.
 */
export function guardTablePreparation(ctx: Context, store: () => string) {
  const proxy = ctx.get('model') as unknown as Model | undefined
  if (!proxy) return
  const model = ((proxy as any)[ORIGINAL] ?? proxy) as Model
  const prepare = model.prepare.bind(model)
  const prepared = model.prepared.bind(model)
  const failed = new Map<string, unknown>()
  const logger = ctx.logger('database')
  model.prepare = (name: string) => prepare(name).then(() => {
    if (failed.delete(name)) logger.info('table %s is prepared again', name)
  }, (error) => {
    if (!failed.size) logger.warn('could not prepare table %s; queries answer STORE_UNAVAILABLE until it is (%s)', name, (error as Error)?.message ?? error)
    failed.set(name, error)
  })
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

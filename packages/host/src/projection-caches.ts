import type { Context } from 'cordis'
import { driverOf } from './store/health'
import { sqliteHandleOf, type SQLiteHandle } from './sessions/sqlite-handle'
import type { ProjectionRow } from './tables'

const UPSERT = 'INSERT INTO `taskward_projection` (`sessionId`, `key`, `version`, `asOfSeq`, `state`) VALUES (?, ?, ?, ?, ?)'
  + ' ON CONFLICT (`sessionId`, `key`) DO UPDATE SET `version` = excluded.`version`, `asOfSeq` = excluded.`asOfSeq`, `state` = excluded.`state`'

/**
 * Save projection caches (each replaces the row of its session and key); resolves once as durable as
 * configured. On the embedded SQLite store: one prepared statement, in transactions of SAVE_CHUNK_ROWS
 * rows, the state as the JSON text minato's `json` column holds (minato reads it back as ever).
 * minato's own upsert reads the rows back first and compares every row with every other (quadratic):
 * with 500 live sessions the batched save of their caches held the host's thread ~250 ms every
 * second. Other stores: minato.
 */
export function saveProjectionCaches(ctx: Context, database: Context['database'], rows: ProjectionRow[]): Promise<void> {
  if (!rows.length) return Promise.resolve()
  const handle = sqliteHandleOf(driverOf(database), ctx)
  if (!handle) return database.upsert('taskward_projection', rows).then(() => {})
  return saveOnSQLite(handle, rows)
}

/**
 * Rows per transaction. A save is written in chunks with a turn of the event loop between them: the
 * save of 500 sessions' caches (2,500 rows, ~100 ms of writing) would otherwise hold every session's
 * next step that long at once.
 */
export const SAVE_CHUNK_ROWS = 100

async function saveOnSQLite(handle: SQLiteHandle, rows: ProjectionRow[]) {
  if (!handle.isReady) await handle.ready()
  const durable: Promise<void>[] = []
  // The staged events first, as before every minato write: no cache is durable before what it folded.
  // Once: a batched save takes no cache that folded an event staged now (Projections checks
  // `stagedFrom`), and events staged between chunks are later than every row of this save.
  handle.driver.beforeWrite?.()
  try {
    for (let at = 0; at < rows.length; at += SAVE_CHUNK_ROWS) {
      if (at) await new Promise((resolve) => setImmediate(resolve))
      handle.guard(() => {
        const upsert = handle.statement(UPSERT)
        handle.transaction(() => {
          for (const { sessionId, key, version, asOfSeq, state } of rows.slice(at, at + SAVE_CHUNK_ROWS)) {
            upsert.run([sessionId, key, version, asOfSeq, JSON.stringify(state) ?? null])
          }
        })
      })
      const committed: Promise<void> | undefined = handle.driver.committed?.()
      // Handled at once: a flush that fails while the loop waits between chunks must not reject
      // unhandled (the outcome is read below, once every chunk is written).
      if (committed) {
        committed.catch(() => {})
        durable.push(committed)
      }
    }
  } finally {
    // Every chunk written is waited for, also when a later one failed (nothing left unhandled).
    const outcomes = await Promise.allSettled(durable)
    const failed = outcomes.find((outcome) => outcome.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason
  }
}

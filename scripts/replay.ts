/*
 * `npm run replay -- <session> [--data DIR] [--db FILE]`: re-derive every recovery decision and the
 * supervisor and recovery states of a stored session from its log, and print where they differ from
 * what is stored (the recorded decisions, the cached projections). Prints PASS when nothing differs;
 * exits 1 on a difference, 2 on bad usage.
 *
 * It reads a copy of the SQLite file (the data directory's `taskward.db`, or --db), so a running host
 * is never disturbed and nothing is written.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Context } from 'cordis'
import * as Database from '@taskward/plugin-database'
import { defineTables } from '@taskward/host'
import {
  applySupervisorEvent, foldRecovery, initRecoveryState, initSupervisorState, RECOVERY_NAMESPACE, SUPERVISOR_PROJECTION_KEY,
  type SessionEvent,
} from '@taskward/protocol'
import { canonicalJson, divergentDecisions, replayEvents } from './replay.lib'

function usage(message: string): never {
  console.error(`${message}\nUsage: npm run replay -- <session id> [--data DIR] [--db FILE]`)
  process.exit(2)
}

/** The first path at which two JSON values differ, e.g. `current.nodeRuns.a.status`. */
function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (canonicalJson(a) === canonicalJson(b)) return undefined
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const found = firstDifference((a as any)[key], (b as any)[key], path ? `${path}.${key}` : key)
      if (found !== undefined) return found
    }
  }
  return path || '(root)'
}

async function main() {
  const args = process.argv.slice(2)
  let sessionId: string | undefined
  let dataDir = Database.dataDirectory()
  let dbFile: string | undefined
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--data') dataDir = resolve(args[++i] ?? usage('--data needs a directory'))
    else if (args[i] === '--db') dbFile = resolve(args[++i] ?? usage('--db needs a file'))
    else if (args[i].startsWith('--')) usage(`Unknown option ${args[i]}.`)
    else if (!sessionId) sessionId = args[i]
    else usage(`One session at a time (got ${sessionId} and ${args[i]}).`)
  }
  if (!sessionId) usage('Name the session to replay.')
  const source = dbFile ?? join(dataDir, 'taskward.db')
  if (!existsSync(source)) usage(`There is no database at ${source}; pass --data or --db.`)

  const scratch = await mkdtemp(join(tmpdir(), 'taskward-replay-'))
  const ctx = new Context()
  try {
    await copyFile(source, join(scratch, 'taskward.db'))
    ctx.plugin(Database, { driver: 'sqlite', path: join(scratch, 'taskward.db') })
    await ctx.start()
    await new Promise<void>((ready) => ctx.inject(['database'], (inner) => {
      defineTables(inner)
      ready()
    }))
    const rows = await ctx.database.select('taskward_event').where({ sessionId }).orderBy('seq', 'asc').execute()
    if (!rows.length) usage(`Session ${sessionId} has no events in ${source}.`)
    const events: SessionEvent[] = rows.map((row) => ({ seq: row.seq, type: row.type, time: row.time, data: row.data }))
    const replay = replayEvents(events)
    const problems: string[] = []

    for (const check of divergentDecisions(replay)) {
      problems.push(`decision ${check.decisionId} at seq ${check.seq} differs:\n  recorded: ${check.recorded}\n  derived:  ${check.derived}`)
    }
    // The cached projections (what the host serves) against today's fold of the log up to the same seq.
    const cached = await ctx.database.get('taskward_projection', { sessionId })
    const folds: Record<string, (events: SessionEvent[]) => unknown> = {
      [SUPERVISOR_PROJECTION_KEY]: (upTo) => upTo.reduce(applySupervisorEvent, initSupervisorState()),
      [RECOVERY_NAMESPACE]: (upTo) => upTo.reduce(foldRecovery, initRecoveryState()),
    }
    let compared = 0
    for (const row of cached) {
      const fold = folds[row.key]
      if (!fold) continue
      compared++
      const upTo = events.filter((event) => event.seq <= row.asOfSeq)
      const derived = fold(upTo)
      const where = firstDifference(row.state, derived)
      if (where !== undefined) problems.push(`projection ${row.key} (cache version ${row.version}, as of seq ${row.asOfSeq}) differs from the replayed fold at ${where}`)
    }
    if (replay.final.supervisor.poisoned) problems.push(`the supervisor fold is poisoned: ${replay.final.supervisor.poisoned.message}`)
    if (replay.final.recovery.poisoned) problems.push(`the recovery fold is poisoned: ${replay.final.recovery.poisoned.message}`)

    const task = replay.final.supervisor.current
    console.log(`session ${sessionId}: ${events.length} events (seq ${events[0].seq}..${events.at(-1)!.seq}), `
      + `${replay.decisions.length} recovery decisions re-derived, ${compared} cached projections compared, task ${task ? `${task.id} ${task.phase} r${task.revision}` : 'none'}`)
    if (problems.length) {
      for (const problem of problems) console.log(`DIFF ${problem}`)
      process.exitCode = 1
    } else {
      console.log('PASS')
    }
  } finally {
    await ctx.stop()
    await rm(scratch, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})

/**
 * The batched save of projection caches (packages/host/src/projection-caches.ts): every cache the
 * appends advanced, written in one save about once a second. With PROJECTION_SAVE_SESSIONS (default
 * 100 and 500) live sessions of 5 caches each (the full plugin set's keys), states of ~2 KB of JSON,
 * the time of one save of all of them — as inserts, then as updates, which is what a running host
 * does — against minato's own `upsert` of the same rows on the same SQLite file, in the same run,
 * median of PROJECTION_SAVE_ROUNDS (default 5) alternating rounds. The save runs on the host's
 * thread: while it runs no session's step goes on. Goals: updates <= 0.25x minato's upsert at every
 * size (minato reads the rows back and compares each with each: at 500 sessions it held the thread
 * ~250 ms per save in the paced scale run); inserts (a cache's first save only) <= 0.5x.
 */
import { TestHost } from '@taskward/testkit'
import { saveProjectionCaches } from '../packages/host/src/projection-caches'
import { Goals } from './goals'

const SIZES = (process.env.PROJECTION_SAVE_SESSIONS ?? '100,500').split(',').map(Number)
const ROUNDS = Number(process.env.PROJECTION_SAVE_ROUNDS ?? 5)
if (!SIZES.every((n) => Number.isSafeInteger(n) && n > 0) || !(Number.isSafeInteger(ROUNDS) && ROUNDS > 0)) {
  console.error('PROJECTION_SAVE_SESSIONS must be positive integers (comma-separated), PROJECTION_SAVE_ROUNDS a positive integer.')
  process.exit(1)
}
const KEYS = ['dsh-task-supervisor', 'recovery', 'admission/record-pairs', 'repair', 'model-window']

/** A state shaped like a task's: nodes with statuses and findings, ~2 KB as JSON. */
const stateOf = (session: number, round: number) => ({
  phase: 'active', round, objective: `session ${session}: write the files the plan names and verify them`,
  nodes: Array.from({ length: 8 }, (_, i) => ({ id: `n${i}`, title: `node ${i} of session ${session}`, status: i < round % 8 ? 'passed' : 'pending', attempt: 1 + (round % 3), finding: 'the file exists and says done'.repeat(2) })),
  budgets: { retries: { used: round % 4, limit: 3 }, strategy: { used: 0, limit: 1 } },
})

const rowsOf = (prefix: string, sessions: number, round: number) => Array.from({ length: sessions }, (_, s) => KEYS.map((key) => ({
  sessionId: `${prefix}-${s}`, key, version: 1, asOfSeq: round * 10 + s, state: stateOf(s, round),
}))).flat()

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const goals = new Goals()
const host = await TestHost.boot()
try {
  const { ctx } = host
  const database = ctx.database
  const time = async (save: () => Promise<unknown>) => {
    const start = process.hrtime.bigint()
    await save()
    return Number(process.hrtime.bigint() - start) / 1e6
  }
  await ctx.database.prepared()
  await saveProjectionCaches(ctx, database, rowsOf('warm', 10, 0))
  for (const sessions of SIZES) {
    const figures = { ours: { insert: [] as number[], update: [] as number[] }, minato: { insert: [] as number[], update: [] as number[] } }
    for (let round = 0; round < ROUNDS; round++) {
      // Fresh ids per round and path: the first save inserts, the second updates the same rows.
      const ours = `ours-${sessions}-${round}`
      const theirs = `minato-${sessions}-${round}`
      figures.minato.insert.push(await time(() => database.upsert('taskward_projection', rowsOf(theirs, sessions, 1))))
      figures.ours.insert.push(await time(() => saveProjectionCaches(ctx, database, rowsOf(ours, sessions, 1))))
      figures.ours.update.push(await time(() => saveProjectionCaches(ctx, database, rowsOf(ours, sessions, 2))))
      figures.minato.update.push(await time(() => database.upsert('taskward_projection', rowsOf(theirs, sessions, 2))))
    }
    for (const kind of ['insert', 'update'] as const) {
      const ours = median(figures.ours[kind])
      const theirs = median(figures.minato[kind])
      console.log(`save ${sessions * KEYS.length} caches (${sessions} sessions) as ${kind}s: ${ours.toFixed(1)} ms, minato's upsert ${theirs.toFixed(1)} ms (${(ours / theirs).toFixed(3)}x)`)
      const goal = kind === 'update' ? 0.25 : 0.5
      goals.check(`projection cache save, ${sessions} sessions, ${kind}s`, ours / theirs <= goal, `${(ours / theirs).toFixed(3)}x minato's upsert, goal <= ${goal}x`)
    }
  }
} finally {
  await host.dispose()
}
goals.report()

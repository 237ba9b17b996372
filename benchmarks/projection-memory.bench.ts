/**
 * The projection caches' bookkeeping on the append path: following one event of a hot session sets
 * each of its caches (`ProjectionMemory.set`, which also records the session's recency for the
 * `projections.cachedSessions` trim), while other sessions advance in between (many agents at once).
 * Measured with PROJECTION_MEMORY_SESSIONS (default 1,000 and 10,000) sessions cached, against the
 * floor: a plain Map of the same ids set the same way, in the same run, median of
 * PROJECTION_MEMORY_ROUNDS (default 3) alternating rounds. Goal: <= 6x the plain Map (the bookkeeping
 * of one append must not grow with the number of sessions held; the index by session costs a second
 * lookup and a slice per set: 1.4x at 1,000 sessions, 3.5x at 10,000 — 57x and 230x at 7697754).
 */
import { ProjectionMemory } from '../packages/host/src/projection-memory'
import { Goals } from './goals'

const COUNTS = (process.env.PROJECTION_MEMORY_SESSIONS ?? '1000,10000').split(',').map(Number)
const ROUNDS = Number(process.env.PROJECTION_MEMORY_ROUNDS ?? 3)
const EVENTS = 200_000
if (!COUNTS.every((n) => Number.isSafeInteger(n) && n > 0) || !(Number.isSafeInteger(ROUNDS) && ROUNDS > 0)) {
  console.error('PROJECTION_MEMORY_SESSIONS must be positive integers (comma-separated), PROJECTION_MEMORY_ROUNDS a positive integer.')
  process.exit(1)
}

/** The keys the full plugin set folds per session (supervisor, recovery, admission, …). */
const KEYS = ['dsh-task-supervisor', 'recovery', 'admission/record-pairs', 'repair', 'model-window']

interface Store { set(id: string, value: { seq: number }): unknown }

/** ns per followed event: the hot session's caches, then one cache of another session. */
function followCost(store: Store, sessions: number) {
  const hot = KEYS.map((key) => `session-0\u0000${key}`)
  const others = Array.from({ length: sessions }, (_, s) => `session-${s}\u0000${KEYS[0]}`)
  for (let s = 0; s < sessions; s++) for (const key of KEYS) store.set(`session-${s}\u0000${key}`, { seq: 0 })
  const start = process.hrtime.bigint()
  for (let seq = 1; seq <= EVENTS; seq++) {
    for (const id of hot) store.set(id, { seq })
    store.set(others[seq % sessions], { seq })
  }
  return Number(process.hrtime.bigint() - start) / EVENTS
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const goals = new Goals()
followCost(new ProjectionMemory(), 100)
for (const sessions of COUNTS) {
  const ours: number[] = []
  const floor: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    floor.push(followCost(new Map(), sessions))
    ours.push(followCost(new ProjectionMemory(), sessions))
  }
  const ratio = median(ours) / median(floor)
  console.log(`follow one event (${KEYS.length} caches) with ${sessions.toLocaleString('en-US')} sessions cached: ${median(ours).toFixed(0)} ns, plain Map ${median(floor).toFixed(0)} ns`)
  goals.check(`projection bookkeeping per event, ${sessions} sessions cached`, ratio <= 6, `${ratio.toFixed(2)}x a plain Map's, goal <= 6x`)
}
goals.report()

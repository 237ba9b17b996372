/**
 * Host kernel benchmark, on a real host (SQLite file through minato), measured against baselines in
 * the same run:
 *   1. append:  HOST_BENCH_EVENTS (default 10,000) `session.append` calls, one after another
 *               vs. one raw `database.upsert('taskward_event', rows)` of the same rows.
 *               The gap is the price of durability per event (one commit each), serialization and freezing.
 *   2. rebuild: a projection fold from seq 0 over the same session after `invalidate`
 *               vs. `JSON.parse` of the same events serialized as JSONL (the floor for any log reader).
 * Each measure runs HOST_BENCH_ROUNDS times (default 3, rebuilds only; appends grow the log) and reports
 * the median.
 */
import { TestHost } from '@taskward/testkit'
import type { ProjectionDef } from '@taskward/host'
import type { SessionEvent } from '@taskward/protocol'
import { tmpdir } from 'node:os'

const EVENTS = Number(process.env.HOST_BENCH_EVENTS ?? 10_000)
const ROUNDS = Number(process.env.HOST_BENCH_ROUNDS ?? 3)
if (!(Number.isSafeInteger(EVENTS) && EVENTS > 0 && Number.isSafeInteger(ROUNDS) && ROUNDS > 0)) {
  console.error('HOST_BENCH_EVENTS and HOST_BENCH_ROUNDS must be positive integers.')
  process.exit(1)
}

const TYPES = ['user/message', 'assistant/message', 'tool/call', 'tool/result', 'extension/record']

/** A payload shaped like a typical event: some text, a few scalars, a small nested object. */
function payload(i: number) {
  return {
    text: `event ${i}: ${'lorem ipsum dolor sit amet '.repeat(4)}`,
    index: i,
    callId: `call-${i % 97}`,
    args: { path: `src/file-${i % 50}.ts`, flags: [i % 2 === 0, i % 3 === 0] },
  }
}

/** A fold of the usual shape: counts by type and a running total, without mutating its input. */
const summary: ProjectionDef<{ byType: Record<string, number>, total: number, lastText: string }> = {
  key: 'bench-summary',
  version: 1,
  init: () => ({ byType: {}, total: 0, lastText: '' }),
  apply: (state, event: SessionEvent) => ({
    byType: { ...state.byType, [event.type]: (state.byType[event.type] ?? 0) + 1 },
    total: state.total + (event.data?.index ?? 0),
    lastText: event.data?.text ?? state.lastText,
  }),
}

function gc() {
  (globalThis as any).gc?.()
}

async function timed<T>(fn: () => Promise<T> | T): Promise<[ms: number, value: T]> {
  gc()
  const start = process.hrtime.bigint()
  const value = await fn()
  return [Number(process.hrtime.bigint() - start) / 1e6, value]
}

function median(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const host = await TestHost.boot()
try {
  const { ctx } = host
  ctx.plugin({ name: 'bench-projection', inject: ['projections'], apply: (c) => { c.projections.register(summary) } })

  // 1. Appends, each committed before the next, against one bulk upsert of the same rows.
  const session = await ctx.sessions.create({ cwd: tmpdir() })
  const [appendMs] = await timed(async () => {
    for (let i = 0; i < EVENTS; i++) await session.append(TYPES[i % TYPES.length], payload(i))
  })
  const written = []
  for await (const event of session.events(0)) written.push(event)
  if (written.length !== EVENTS) throw new Error(`expected ${EVENTS} events, found ${written.length}`)
  const rows = written.map((event) => ({ sessionId: 'bench-baseline', seq: event.seq, type: event.type, time: event.time, data: event.data }))
  const [upsertMs] = await timed(() => ctx.database.upsert('taskward_event', rows))

  // 2. Rebuild from seq 0 against JSON.parse of the same events as JSONL.
  const jsonl = written.map((event) => JSON.stringify(event)).join('\n')
  const rebuilds: number[] = []
  const parses: number[] = []
  let folded: any
  for (let round = 0; round < ROUNDS; round++) {
    await ctx.projections.invalidate(session, summary.key)
    const [ms, state] = await timed(() => ctx.projections.get(session, summary.key))
    rebuilds.push(ms)
    folded = state
    const [parseMs, parsed] = await timed(() => jsonl.split('\n').map((line) => JSON.parse(line)))
    if (parsed.length !== EVENTS) throw new Error('JSONL baseline lost events')
    parses.push(parseMs)
  }
  if (folded.byType['tool/call'] !== EVENTS / TYPES.length) throw new Error('the fold did not see every event')
  const asOf = await ctx.projections.describe(session, summary.key)
  if (asOf?.asOfSeq !== EVENTS - 1) throw new Error(`projection cache stands at ${asOf?.asOfSeq}, expected ${EVENTS - 1}`)

  const rebuildMs = median(rebuilds)
  const parseMs = median(parses)
  const rate = (ms: number) => Math.round(EVENTS / (ms / 1000)).toLocaleString('en-US')
  const table = [
    ['measure', 'ours', 'baseline', 'ratio'],
    [`append ${EVENTS.toLocaleString('en-US')} events`, `${appendMs.toFixed(0)} ms (${rate(appendMs)} ev/s)`, `${upsertMs.toFixed(0)} ms (${rate(upsertMs)} ev/s) raw upsert`, `${(appendMs / upsertMs).toFixed(1)}x`],
    [`rebuild from seq 0 (median of ${ROUNDS})`, `${rebuildMs.toFixed(0)} ms (${rate(rebuildMs)} ev/s)`, `${parseMs.toFixed(1)} ms (${rate(parseMs)} ev/s) JSONL parse`, `${(rebuildMs / parseMs).toFixed(1)}x`],
  ]
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)))
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '))
} finally {
  await host.dispose()
}

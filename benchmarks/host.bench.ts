/**
 * Host kernel benchmark, on real hosts (SQLite file, WAL), measured against baselines in the same run:
 *   1. durable append (durability: fsync): HOST_BENCH_EVENTS (default 10,000) `session.append` calls,
 *      one after another, vs. raw prepared-statement INSERTs of the same rows (a session id of the
 *      same shape) on the driver's own handle of a second, identical host, each followed by an fdatasync
 *      of the WAL (the same flush the host makes) and the same WAL upkeep (checkpoints). Goal: >= 0.8x.
 *   2. append (durability: os): the same, vs. raw prepared INSERTs without flush. Goal: >= 0.8x.
 *   3. rebuild: a projection fold from seq 0 over the same session after `invalidate`
 *      vs. `JSON.parse` of the same events serialized as JSONL (the floor for any log reader).
 * Each measure runs HOST_BENCH_ROUNDS times (default 3, ours and the baseline alternating) and
 * reports the median. Appends print our speed as a fraction of the baseline's (higher is better);
 * the rebuild prints its time as a multiple of the parse time (lower is better).
 */
import { TestHost } from '@taskward/testkit'
import type { ProjectionDef } from '@taskward/host'
import type { SessionEvent } from '@taskward/protocol'
import { tmpdir } from 'node:os'
import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { closeSync, fdatasync, openSync } from 'node:fs'
import { promisify } from 'node:util'
import { randomUUID } from 'node:crypto'
import { storeDriver } from '@taskward/host'
import { Goals } from './goals'

const fdatasyncAsync = promisify(fdatasync)

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

/** A host on a fresh data directory with the given durability. */
async function bootWith(durability: 'fsync' | 'os') {
  const dataDir = await mkdtemp(join(tmpdir(), 'taskward-bench-'))
  const host = await TestHost.boot({ dataDir, database: { driver: 'sqlite', path: join(dataDir, 'taskward.db'), durability } })
  return { host, dispose: async () => { await host.dispose(); await rm(dataDir, { recursive: true, force: true }) } }
}

async function appendBench(durability: 'fsync' | 'os') {
  // Ours and the baseline each write their own database, set up alike (same plugin, same durability),
  // so that neither pays for the other's WAL frames when it checkpoints.
  const ourHost = await bootWith(durability)
  const rawHost = await bootWith(durability)
  try {
    const { host } = ourHost
    const rows = Array.from({ length: EVENTS }, (_, i) => ({ seq: i, type: TYPES[i % TYPES.length], time: Date.now(), data: payload(i) }))
    const warm = await host.ctx.sessions.create({ cwd: tmpdir() })
    await warm.append('bench/warm', {})
    await (await rawHost.host.ctx.sessions.create({ cwd: tmpdir() })).append('bench/warm', {})
    const rawDriver = storeDriver(rawHost.host.ctx) as any
    const walFd = openSync(rawHost.host.dbPath + '-wal', 'r')
    const flush = durability === 'fsync' ? () => fdatasyncAsync(walFd) : undefined
    const insert = rawDriver.db.prepare('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES (?, ?, ?, ?, ?)')
    const ours: number[] = []
    const raw: number[] = []
    // Ours and the baseline alternate in chunks of CHUNK events, so that the load of a shared machine
    // falls on both alike; each side's time is the sum of its chunks. Who goes first alternates too:
    // the side that runs right after the collection between chunks runs ~1.5x slower (measured).
    const CHUNK = 100
    for (let round = -1; round < ROUNDS; round++) {
      const session = await host.ctx.sessions.create({ cwd: tmpdir() })
      // The same rows: a session id of the same shape (a random UUID) keys the same index work.
      const rawId = randomUUID()
      let oursNs = 0n
      let rawNs = 0n
      const runOurs = async (start: number, end: number) => {
        const t = process.hrtime.bigint()
        for (let i = start; i < end; i++) await session.append(rows[i].type, rows[i].data)
        oursNs += process.hrtime.bigint() - t
      }
      const runRaw = async (start: number, end: number) => {
        const t = process.hrtime.bigint()
        for (let i = start; i < end; i++) {
          insert.run([rawId, i, rows[i].type, Date.now(), JSON.stringify(rows[i].data)])
          if (flush) await flush()
          // The WAL upkeep every SQLite store needs (the same checkpoints ours makes), never the flush.
          const upkeep = rawDriver.maintain()
          if (upkeep) await upkeep
        }
        rawNs += process.hrtime.bigint() - t
      }
      for (let start = 0, chunk = 0; start < EVENTS; start += CHUNK, chunk++) {
        const end = Math.min(EVENTS, start + CHUNK)
        gc()
        if (chunk % 2 === 0) {
          await runOurs(start, end)
          await runRaw(start, end)
        } else {
          await runRaw(start, end)
          await runOurs(start, end)
        }
      }
      if (session.seq !== EVENTS) throw new Error(`expected ${EVENTS} events, found ${session.seq}`)
      // Round -1 warms up both paths (JIT, statement caches, the WAL file).
      if (round < 0) continue
      ours.push(Number(oursNs) / 1e6)
      raw.push(Number(rawNs) / 1e6)
    }
    insert.free()
    closeSync(walFd)
    return { ours: median(ours), raw: median(raw) }
  } finally {
    await ourHost.dispose()
    await rawHost.dispose()
  }
}

const rate = (ms: number) => Math.round(EVENTS / (ms / 1000)).toLocaleString('en-US')
const table = [['measure', 'ours', 'baseline', 'speed vs baseline', 'goal']]
const goals = new Goals()
for (const durability of ['fsync', 'os'] as const) {
  const { ours, raw } = await appendBench(durability)
  table.push([
    `append ${EVENTS.toLocaleString('en-US')} events, durability ${durability} (median of ${ROUNDS})`,
    `${ours.toFixed(0)} ms (${rate(ours)} ev/s)`,
    `${raw.toFixed(0)} ms (${rate(raw)} ev/s) raw prepared INSERT${durability === 'fsync' ? ' + fdatasync' : ''}`,
    `${(raw / ours).toFixed(2)}x`,
    '>= 0.8x',
  ])
  goals.check(`append, durability ${durability}`, raw / ours >= 0.8, `${(raw / ours).toFixed(2)}x the raw inserts, goal >= 0.8x`)
}

const { host, dispose } = await bootWith('os')

try {
  const { ctx } = host
  ctx.plugin({ name: 'bench-projection', inject: ['projections'], apply: (c) => { c.projections.register(summary) } })

  // 3. Rebuild from seq 0 against JSON.parse of the same events as JSONL.
  const session = await ctx.sessions.create({ cwd: tmpdir() })
  await session.appendBatch(Array.from({ length: EVENTS }, (_, i) => ({ type: TYPES[i % TYPES.length], data: payload(i) })))
  const written = []
  for await (const event of session.events(0)) written.push(event)
  if (written.length !== EVENTS) throw new Error(`expected ${EVENTS} events, found ${written.length}`)
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
  table.push([`rebuild from seq 0 (median of ${ROUNDS})`, `${rebuildMs.toFixed(0)} ms (${rate(rebuildMs)} ev/s)`, `${parseMs.toFixed(1)} ms (${rate(parseMs)} ev/s) JSONL parse`, `${(rebuildMs / parseMs).toFixed(2)}x the time`, '-'])
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)))
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '))
  goals.report()
} finally {
  await dispose()
}

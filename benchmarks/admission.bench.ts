/**
 * Reader-admission benchmark: the per-step cost of `admission.check(session)` on a session of
 * ADMISSION_BENCH_EVENTS events (default 100,000), against baselines measured in the same run.
 *
 * Setup: a real TestHost (SQLite file) with the admission plugin and test readers. The log is written
 * with direct batched `database.upsert('taskward_event', rows)` — appending 100,000 events one by one
 * through `session.append` would take minutes and measure the database, not the check — and the host is
 * then restarted so that sessions and the admission index see those rows as they would after any
 * restart. Every 10th event is an `extension/record` of one of four (namespace, version) pairs; the rest
 * are ordinary message and tool events.
 *
 * Figures (all in the same process):
 *   - rescan:      what a check would cost without an index: read the whole log and fold it (median);
 *   - cold:        the first check after the restart with no cached index (one fold, writes the cache);
 *   - restart:     the first check after another restart, with the index cached in the database;
 *   - warm:        `admission.check(session)` on the hot path (µs per call, after warm-up);
 *   - after append: the same right after an append (the index is advanced by `session/event`);
 *   - hook:        what the host pays per step: `ctx.serial('agent/before-step', agent)`, i.e. Cordis'
 *                  dispatch plus the admission listener, next to the dispatch of an event nobody listens
 *                  to (Cordis' own floor; the difference is the admission listener).
 * The service handle is taken once (`const admission = ctx.admission`): every `ctx.admission` property
 * read goes through Cordis' tracing proxy and costs more than the check itself.
 * The machine is shared, so single runs are noisy; compare figures within a run.
 */
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { RECORD_EVENT_TYPE, defineReader, indexRecordEvents, type SessionEvent } from '@taskward/protocol'
import Schema from 'schemastery'
import Admission from '@taskward/plugin-admission'

const EVENTS = Number(process.env.ADMISSION_BENCH_EVENTS ?? 100_000)
const CALLS = Number(process.env.ADMISSION_BENCH_CALLS ?? 20_000)
const WARMUP = 2_000
const APPENDS = 500
const BATCH = 5_000
const RESCANS = 3

if (!(Number.isSafeInteger(EVENTS) && EVENTS > 0 && Number.isSafeInteger(CALLS) && CALLS > 0)) {
  console.error('ADMISSION_BENCH_EVENTS and ADMISSION_BENCH_CALLS must be positive integers.')
  process.exit(1)
}

const any = { schemas: { 1: Schema.object({ id: Schema.string() }) } }
const readers = [
  defineReader({ namespace: 'dsh-task-supervisor', writes: 10, minVersion: 1, kinds: { state: any } }),
  defineReader({ namespace: 'dsh-task-supervisor-repair', writes: 1, minVersion: 1, kinds: { proposal: any, confirm: any, decline: any } }),
  defineReader({ namespace: 'dsh-task-supervisor-recovery', writes: 1, minVersion: 1, kinds: { attempt: any } }),
]
const readerPlugin = {
  name: 'bench-readers',
  inject: ['admission'],
  apply(ctx: any) {
    for (const reader of readers) ctx.admission.registerReader(reader)
  },
}
const PAIRS = [
  ['dsh-task-supervisor', 9, 'state'], ['dsh-task-supervisor', 10, 'state'],
  ['dsh-task-supervisor-repair', 1, 'proposal'], ['dsh-task-supervisor-recovery', 1, 'attempt'],
] as const
const PLAIN = ['user/message', 'assistant/message', 'tool/call', 'tool/result'] as const

function eventAt(seq: number) {
  if (seq % 10 === 3) {
    const [namespace, schemaVersion, kind] = PAIRS[(seq / 10 | 0) % PAIRS.length]
    return { type: RECORD_EVENT_TYPE, data: { namespace, schemaVersion, kind, recordId: `r${seq}`, payload: { id: `t${seq % 7}` } } }
  }
  const type = PLAIN[seq % PLAIN.length]
  return { type, data: type.startsWith('tool/') ? { callId: `c${seq}`, name: 'read', args: { path: 'src/index.ts' } } : { text: `message ${seq} about the task` } }
}

const now = () => process.hrtime.bigint()
const ms = (ns: bigint) => Number(ns) / 1e6
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]
const gc = () => (globalThis as any).gc?.()

const cwd = await tempWorkspace({ 'README.md': 'bench' })
const plugins: [any, any?][] = [[Admission], [readerPlugin]]
let host = await TestHost.boot({ plugins, waitFor: ['admission'] })
try {
  const created = await host.ctx.sessions.create({ id: 'bench', cwd })
  let started = now()
  for (let from = 0; from < EVENTS; from += BATCH) {
    const rows = []
    for (let seq = from; seq < Math.min(EVENTS, from + BATCH); seq++) rows.push({ sessionId: created.id, seq, time: 1_700_000_000_000 + seq, ...eventAt(seq) })
    await host.ctx.database.upsert('taskward_event', rows)
  }
  console.log(`wrote ${EVENTS} events (${EVENTS / 10} records) in ${(ms(now() - started) / 1000).toFixed(1)} s`)
  await host.restart()
  let session = await host.ctx.sessions.get('bench')
  if (session.seq !== EVENTS) throw new Error(`expected ${EVENTS} events, the host sees ${session.seq}`)

  // Baseline: a check without an index has to read and fold the whole log.
  const rescans: number[] = []
  let scanned
  for (let i = 0; i < RESCANS; i++) {
    gc()
    started = now()
    const events: SessionEvent[] = []
    for await (const event of session.events()) events.push(event)
    scanned = indexRecordEvents(events)
    rescans.push(ms(now() - started))
  }
  const rescan = median(rescans)

  let admission = host.ctx.admission
  gc()
  started = now()
  const missing = await admission.check(session)
  const cold = ms(now() - started)
  if (missing.length) throw new Error(`unexpected missing readers: ${JSON.stringify(missing)}`)
  if (Object.keys(scanned!.pairs).length !== PAIRS.length) throw new Error('the rescan saw the wrong pairs')

  const perCall = async (fn: () => Promise<unknown>) => {
    for (let i = 0; i < WARMUP; i++) await fn()
    gc()
    const begin = now()
    for (let i = 0; i < CALLS; i++) await fn()
    return ms(now() - begin) * 1000 / CALLS
  }
  const warmUs = await perCall(() => admission.check(session))
  const { ctx } = host
  const agent = await ctx.agents.create({ sessionId: session.id, model: 'scripted' })
  const hookUs = await perCall(() => ctx.serial('agent/before-step', agent))
  const floorUs = await perCall(() => ctx.serial('taskward/bench-nobody-listens' as any))

  let afterAppend = 0n
  for (let i = 0; i < APPENDS; i++) {
    const { type, data } = eventAt(session.seq)
    await session.append(type, data)
    started = now()
    await admission.check(session)
    afterAppend += now() - started
  }
  const afterAppendUs = ms(afterAppend) * 1000 / APPENDS

  await host.restart()
  session = await host.ctx.sessions.get('bench')
  admission = host.ctx.admission
  gc()
  started = now()
  await admission.check(session)
  const restart = ms(now() - started)

  const rows = [
    ['rescan (baseline: read + fold the log, median of 3)', `${rescan.toFixed(1)} ms`],
    ['cold check (first use: one fold, cache written)', `${cold.toFixed(1)} ms`],
    ['first check after restart (cache in database)', `${restart.toFixed(2)} ms`],
    [`warm check (per call, mean of ${CALLS})`, `${warmUs.toFixed(2)} µs`],
    [`check after an append (mean of ${APPENDS})`, `${afterAppendUs.toFixed(2)} µs`],
    [`agent/before-step hook, whole dispatch (mean of ${CALLS})`, `${hookUs.toFixed(2)} µs`],
    [`  Cordis floor: serial() of an event without listeners`, `${floorUs.toFixed(2)} µs`],
  ]
  console.log(`session of ${EVENTS} events, ${PAIRS.length} (namespace, version) pairs, ${readers.length} readers`)
  for (const [label, value] of rows) console.log(`  ${label.padEnd(56)} ${value}`)
  console.log(`  warm check vs rescan: ${(rescan * 1000 / warmUs).toFixed(0)}x cheaper; vs cold check: ${(cold * 1000 / warmUs).toFixed(0)}x cheaper`)
} finally {
  await host.dispose()
  await removeTree(cwd)
}

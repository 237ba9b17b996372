/**
 * Reader-admission benchmark: the per-step cost of admission on a session of ADMISSION_BENCH_EVENTS
 * events (default 100,000), against baselines measured in the same run. Goals (issue 12) are printed
 * next to each figure.
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
 *   - cold:        the first check after the restart with no cached index (one fold of the records alone,
 *                  read through the type index; the cache is written behind it);
 *                  goal ≤ 0.5 s at 100,000 events;
 *   - restart:     the first check after another restart, with the index cached in the database (the
 *                  cache follows the log in the background, so only its tail is folded); goal ≤ 20 ms;
 *   - warm:        `admission.check(session)` on the hot path (µs per call, after warm-up);
 *   - after append: the same right after an append (the index is advanced by `session/event`);
 *   - hook:        the before-step hook as a turn runs it — the Agent's own `refusal()`, i.e. every step
 *                  guard (admission and supervisor, the real plugins) plus the `agent/before-step`
 *                  compatibility dispatch when anyone listens — on a second host whose sessions hold a
 *                  real supervisor log (benchmarks/supervisor-log.ts) of 100 and of EVENTS events;
 *                  goal ≤ 2 µs at both sizes.
 * The service handle is taken once (`const admission = ctx.admission`): every `ctx.admission` property
 * read goes through Cordis' tracing proxy and costs more than the check itself.
 * The machine is shared, so single runs are noisy; compare figures within a run.
 */
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { RECORD_EVENT_TYPE, defineReader, indexRecordEvents, type SessionEvent } from '@taskward/protocol'
import Schema from 'schemastery'
import Admission from '@taskward/plugin-admission'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { buildSupervisorLog } from './supervisor-log'
import { Goals } from './goals'

const EVENTS = Number(process.env.ADMISSION_BENCH_EVENTS ?? 100_000)
const CALLS = Number(process.env.ADMISSION_BENCH_CALLS ?? 20_000)
const WARMUP = 2_000
const HOOK_WARMUP = 50_000
const HOOK_CALLS = 100_000
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
let disposed = false
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

  let afterAppend = 0n
  for (let i = 0; i < APPENDS; i++) {
    const { type, data } = eventAt(session.seq)
    await session.append(type, data)
    started = now()
    await admission.check(session)
    afterAppend += now() - started
  }
  const afterAppendUs = ms(afterAppend) * 1000 / APPENDS

  // The cache follows the log in the background; let the last write land before stopping.
  await new Promise((resolve) => setTimeout(resolve, 200))
  const cachedAt = (await host.ctx.projections.describe(session, 'admission/record-pairs'))?.asOfSeq
  await host.restart()
  session = await host.ctx.sessions.get('bench')
  admission = host.ctx.admission
  gc()
  started = now()
  await admission.check(session)
  const restart = ms(now() - started)
  const tail = session.seq - 1 - (cachedAt ?? -1)
  // Free this host before booting the next one (the machine has two cores).
  await host.dispose()
  disposed = true

  const hook = await hookCost()

  const rows = [
    ['rescan (baseline: read + fold the log, median of 3)', `${rescan.toFixed(1)} ms`, ''],
    ['cold check (first use: one fold; cache written behind)', `${cold.toFixed(1)} ms`, `goal ≤ 500 ms at 100,000 events; ${(cold / rescan).toFixed(2)}x the rescan`],
    [`first check after restart (cache ${tail} events behind)`, `${restart.toFixed(2)} ms`, 'goal ≤ 20 ms'],
    [`warm check (per call, mean of ${CALLS})`, `${warmUs.toFixed(2)} µs`, ''],
    [`check after an append (mean of ${APPENDS})`, `${afterAppendUs.toFixed(2)} µs`, ''],
    [`before-step hook as a turn runs it (mean of ${HOOK_CALLS})`, '', ''],
    [`  session of ${hook.small.events} events`, `${hook.small.us.toFixed(2)} µs`, `goal ≤ 2 µs${hook.small.synchronous ? '' : ' (answered through a promise!)'}`],
    [`  session of ${hook.large.events} events`, `${hook.large.us.toFixed(2)} µs`, `goal ≤ 2 µs${hook.large.synchronous ? '' : ' (answered through a promise!)'}`],
    [`  (its guards: ${hook.guards})`, '', ''],
  ]
  console.log(`session of ${EVENTS} events, ${PAIRS.length} (namespace, version) pairs, ${readers.length} readers`)
  for (const [label, value, goal] of rows) console.log(`  ${label.padEnd(56)} ${value.padEnd(11)} ${goal}`)
  console.log(`  warm check vs rescan: ${(rescan * 1000 / warmUs).toFixed(0)}x cheaper; vs cold check: ${(cold * 1000 / warmUs).toFixed(0)}x cheaper`)
  const goals = new Goals()
  goals.check(`cold check at ${EVENTS} events`, cold <= 500, `${cold.toFixed(1)} ms, goal <= 500 ms`)
  goals.check('first check after a restart', restart <= 20, `${restart.toFixed(2)} ms, goal <= 20 ms`)
  for (const size of [hook.small, hook.large]) goals.check(`before-step hook at ${size.events} events`, size.us <= 2 && size.synchronous, `${size.us.toFixed(2)} µs${size.synchronous ? '' : ' through a promise'}, goal <= 2 µs`)
  goals.report()
} finally {
  if (!disposed) await host.dispose()
  await removeTree(cwd)
}

/**
 * The before-step hook exactly as `Agent.runTurn` calls it (`await this.refusal()`), on a host with the
 * real admission and supervisor plugins, for a session of 100 events and one of EVENTS events that hold
 * a real supervisor log. Both guards are warmed first (their first answer folds the log).
 */
async function hookCost() {
  const hookCwd = await tempWorkspace({ 'README.md': 'bench' })
  const hookHost = await TestHost.boot({ plugins: [[Admission], [SupervisorPlugin, { automaticContinuation: false }]], waitFor: ['admission', 'supervisor'] })
  try {
    const measure = async (id: string, events: number) => {
      const log = buildSupervisorLog(events, Math.max(1, Math.round(events / 100)))
      await hookHost.ctx.sessions.create({ id, cwd: hookCwd })
      for (let from = 0; from < log.length; from += BATCH) {
        await hookHost.ctx.database.upsert('taskward_event', log.slice(from, from + BATCH).map((e) => ({ sessionId: id, ...e })))
      }
      return { id, events: log.length }
    }
    const small = await measure('hook-small', 100)
    const large = await measure('hook-large', EVENTS)
    await hookHost.restart()
    const cost = async ({ id, events }: { id: string, events: number }) => {
      const agent = await hookHost.ctx.agents.create({ sessionId: id, model: 'scripted' })
      const refusal = () => (agent as unknown as { refusal(): unknown }).refusal()
      const first = await refusal()
      if (first) throw new Error(`the hook refused the bench session ${id}: ${(first as Error).message}`)
      const synchronous = !(refusal() instanceof Promise)
      // Exactly what runTurn does before each step: `const refused = await this.refusal()`.
      const run = async (calls: number) => {
        for (let i = 0; i < calls; i++) {
          const refused = await refusal()
          if (refused) throw new Error('refused')
        }
      }
      // Steady state: the JIT needs tens of thousands of calls before these few lines are optimized.
      await run(HOOK_WARMUP)
      gc()
      const begin = now()
      await run(HOOK_CALLS)
      return { events, us: ms(now() - begin) * 1000 / HOOK_CALLS, synchronous }
    }
    const guards = 'admission + supervisor step guards; no agent/before-step listener'
    return { small: await cost(small), large: await cost(large), guards }
  } finally {
    await hookHost.dispose()
    await removeTree(hookCwd)
  }
}

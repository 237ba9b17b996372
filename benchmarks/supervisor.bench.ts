/**
 * Supervisor benchmark, two figures, each next to a baseline measured in the same run:
 *
 * 1. Projection rebuild: a main-session log of SUPERVISOR_BENCH_EVENTS events (default 100,000) holding
 *    SUPERVISOR_BENCH_TASKS tasks (default 1,000) that each run new → plan review → approve → 3 nodes with
 *    stage reviews → completion, padded with tool calls, results and messages. Timed:
 *      - baseline: JSON.parse of the same log as JSONL (what any reader must at least do);
 *      - fold:     the pure fold (`foldSupervisorEvents`) over the parsed events;
 *      - host:     `supervisor.state()` after invalidating the cache: pages from SQLite + fold + cache write.
 * 2. Guard overhead: `tools.execute` of a trivial tool in a main session with an active task, on a host
 *    without the supervisor (baseline) and with it (the guard reads the in-memory projection).
 */
import { performance } from 'node:perf_hooks'
import {
  applyCompletionReview, applyPlanReview, applyStageReview, approve, foldSupervisorEvents, newTask, RECORD_EVENT_TYPE,
  reportStage, requestCompletion, reviewJobEnvelope, startNode, submitPlan, SUPERVISOR_PROJECTION_KEY, taskStateEnvelope,
  type RecordEnvelope, type ReviewJob, type SessionEvent, type Task, type TaskPlan,
} from '@taskward/protocol'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

const EVENTS = Number(process.env.SUPERVISOR_BENCH_EVENTS ?? 100_000)
const TASKS = Number(process.env.SUPERVISOR_BENCH_TASKS ?? 1_000)
const CALLS = Number(process.env.SUPERVISOR_BENCH_CALLS ?? 2_000)
const PLAN: TaskPlan = {
  acceptanceCriteria: ['parses', 'reports errors'],
  nodes: [{ id: 'a', title: 'tokenizer' }, { id: 'b', title: 'parser', dependsOn: ['a'] }, { id: 'c', title: 'tests', dependsOn: ['a', 'b'] }],
}

/** The log: real transitions and review jobs, padded to EVENTS with ordinary events. */
function buildLog(): SessionEvent[] {
  const events: SessionEvent[] = []
  const push = (type: string, data: unknown) => events.push({ seq: events.length, type, time: 1_700_000_000_000 + events.length, data })
  const perTask = Math.floor(EVENTS / TASKS)
  let task: Task | undefined
  const at = (id?: string) => ({ seq: events.length, time: 1_700_000_000_000 + events.length, ...(id ? { id } : {}) })
  const record = (envelope: RecordEnvelope) => push(RECORD_EVENT_TYPE, envelope)
  const step = (next: Task) => { task = next; record(taskStateEnvelope(next)) }
  const job = (jobId: string, kind: ReviewJob['kind'], status: ReviewJob['status'], nodeId?: string) => record(reviewJobEnvelope({
    jobId, taskId: task!.id, taskRevision: task!.revision, kind, ...(nodeId ? { nodeId } : {}), model: 'scripted',
    reviewerSessionId: `rev-${jobId}`, evidenceSeqs: [events.length - 1], cutoffSeq: events.length - 1, status,
    ...(status === 'finished' ? { verdict: 'pass', findings: [] } : {}),
  } as ReviewJob, `${jobId}:${status}`))
  const pad = (n: number) => {
    for (let i = 0; i < n; i++) {
      const kind = i % 3
      if (kind === 0) push('tool/call', { callId: `c${events.length}`, name: 'read', args: { path: 'src/parser.ts' } })
      else if (kind === 1) push('tool/result', { callId: `c${events.length - 1}`, name: 'read', result: { path: 'src/parser.ts', content: 'export const parse = (s: string) => s.split(",")\n'.repeat(4) } })
      else push('assistant/message', { text: 'Reading the parser to see how lists are tokenized before changing anything.' })
    }
  }
  for (let t = 0; t < TASKS; t++) {
    const start = events.length
    push('user/message', { text: `/task new objective ${t}`, origin: 'user' })
    step(newTask(task, { objective: `objective ${t}` }, at(`task-${t}`)))
    step(submitPlan(task, { plan: PLAN, jobId: `p${t}` }, at()))
    job(`p${t}`, 'plan', 'requested')
    job(`p${t}`, 'plan', 'finished')
    step(applyPlanReview(task, { jobId: `p${t}`, verdict: 'pass', findings: [] }, at()))
    step(approve(task, at()))
    for (const node of PLAN.nodes) {
      step(startNode(task, { nodeId: node.id }, at()))
      pad(8)
      step(reportStage(task, { nodeId: node.id, jobId: `s${t}${node.id}` }, at()))
      job(`s${t}${node.id}`, 'stage', 'requested', node.id)
      job(`s${t}${node.id}`, 'stage', 'finished', node.id)
      step(applyStageReview(task, { jobId: `s${t}${node.id}`, verdict: 'pass', findings: [] }, at()))
    }
    step(requestCompletion(task, { jobId: `c${t}` }, at()))
    job(`c${t}`, 'completion', 'requested')
    job(`c${t}`, 'completion', 'finished')
    step(applyCompletionReview(task, { jobId: `c${t}`, verdict: 'pass', findings: [], evidenceSeqs: [events.length - 1], cutoffSeq: events.length - 1 }, at()))
    pad(Math.max(0, perTask - (events.length - start)))
  }
  pad(EVENTS - events.length)
  return events
}

function time<T>(fn: () => T): [T, number] {
  const started = performance.now()
  const value = fn()
  return [value, performance.now() - started]
}

async function timeAsync<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now()
  const value = await fn()
  return [value, performance.now() - started]
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(1)} ms`

async function rebuild() {
  const log = buildLog()
  const records = log.filter((e) => e.type === RECORD_EVENT_TYPE).length
  const jsonl = log.map((e) => JSON.stringify(e)).join('\n')
  console.log(`log: ${log.length} events, ${TASKS} tasks, ${records} supervisor records, ${(jsonl.length / 1024 / 1024).toFixed(1)} MiB JSONL`)
  const parses: number[] = []
  const folds: number[] = []
  let state
  for (let round = 0; round < 3; round++) {
    const [parsed, parse] = time(() => jsonl.split('\n').map((line) => JSON.parse(line) as SessionEvent))
    parses.push(parse)
    let fold
    ;[state, fold] = time(() => foldSupervisorEvents(parsed))
    folds.push(fold)
  }
  if (state!.poisoned || state!.history.length !== TASKS - 1) throw new Error(`unexpected fold result: ${JSON.stringify(state!.poisoned)}`)
  console.log(`baseline JSON.parse of the log:      ${ms(median(parses))}`)
  console.log(`pure fold of the parsed events:      ${ms(median(folds))} (${(median(folds) / median(parses)).toFixed(2)}x the parse)`)

  const host = await TestHost.boot({ plugins: [[SupervisorPlugin, { automaticContinuation: false }]], waitFor: ['supervisor'] })
  const cwd = await tempWorkspace({})
  try {
    const session = await host.ctx.sessions.create({ cwd })
    for (let i = 0; i < log.length; i += 1000) {
      await host.ctx.database.upsert('taskward_event', log.slice(i, i + 1000).map((e) => ({ sessionId: session.id, ...e })))
    }
    const loaded = await host.ctx.sessions.get(session.id).then(async () => {
      await host.restart()
      return host.ctx.sessions.get(session.id)
    })
    const rounds: number[] = []
    for (let round = 0; round < 3; round++) {
      await host.ctx.projections.invalidate(loaded, SUPERVISOR_PROJECTION_KEY)
      host.ctx.supervisor.forget(loaded.id)
      const [rebuilt, took] = await timeAsync(() => host.ctx.supervisor.state(loaded))
      if (rebuilt.history.length !== TASKS - 1) throw new Error('host rebuild differs')
      rounds.push(took)
    }
    const [, cached] = await timeAsync(() => host.ctx.supervisor.state(loaded))
    console.log(`host rebuild (SQLite pages + fold + cache write): ${ms(median(rounds))} (${(median(rounds) / median(parses)).toFixed(2)}x the parse); `
      + `cached read afterwards: ${ms(cached)}`)
  } finally {
    await host.dispose()
    await removeTree(cwd)
  }
}

async function guardOverhead() {
  const measure = async (plugins: [any, any][]) => {
    const host = await TestHost.boot({ plugins, waitFor: plugins.length ? ['supervisor'] : [] })
    const cwd = await tempWorkspace({})
    try {
      host.ctx.tools.register({ name: 'bench_noop', description: 'does nothing', execute: () => 1 })
      const session = await host.ctx.sessions.create({ cwd })
      if (plugins.length) {
        await host.ctx.commands.input(session, '/task new bench')
        const task = (await host.ctx.supervisor.state(session)).current!
        // An active task, written directly so that no reviewer is involved.
        await host.ctx.supervisor.transact(session, () => ({ records: [taskStateEnvelope({
          ...task, revision: 2, phase: 'active', plan: PLAN, nodeRuns: { a: { attempt: 1, status: 'pending' }, b: { attempt: 1, status: 'pending' }, c: { attempt: 1, status: 'pending' } },
        })], result: undefined }))
      }
      for (let i = 0; i < 200; i++) await host.ctx.tools.execute(session, 'bench_noop', {})
      const [, took] = await timeAsync(async () => {
        for (let i = 0; i < CALLS; i++) {
          const outcome = await host.ctx.tools.execute(session, 'bench_noop', {})
          if (outcome.error) throw new Error(outcome.error.message)
        }
      })
      let stateOnly = 0
      if (plugins.length) {
        ;[, stateOnly] = await timeAsync(async () => {
          for (let i = 0; i < CALLS; i++) await host.ctx.supervisor.state(session)
        })
      }
      return { perCall: took / CALLS, stateOnly: stateOnly / CALLS }
    } finally {
      await host.dispose()
      await removeTree(cwd)
    }
  }
  const without = await measure([])
  const withGuard = await measure([[SupervisorPlugin, { automaticContinuation: false }]])
  const us = (v: number) => `${(v * 1000).toFixed(1)} µs`
  console.log(`tools.execute without the supervisor: ${us(without.perCall)} per call (${CALLS} calls; two SQLite appends each)`)
  console.log(`tools.execute with the guard:         ${us(withGuard.perCall)} per call; overhead ${us(withGuard.perCall - without.perCall)} `
    + `(projection read alone: ${us(withGuard.stateOnly)})`)
}

await rebuild()
await guardOverhead()

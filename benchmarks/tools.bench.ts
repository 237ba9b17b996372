/**
 * Tool-call and agent-step overhead, on real hosts (SQLite file, durability `os`, so that the figure is
 * the CPU the host spends and not the disk's fsync latency), each next to a baseline measured in the
 * same run on the same session:
 *
 * 1. `tools.execute` of a trivial tool (two appends: `tool/call`, `tool/result`) vs. the same two
 *    appends done directly with `session.append`. The difference is what admission, guards and cordis'
 *    service proxies cost per call. NOT in it: the event observers (supervisor fold, recovery's pin
 *    warden and stage reports, admission's index, projections): they run on every append, so the
 *    baseline pays them too; their cost per call shows as the difference between the two hosts'
 *    "appends directly" figures. Measured on a host with the kernel only and on one with the plugins
 *    on the tool path (supervisor with an active task, workspace, recovery, admission). Goal: overhead
 *    ≤ 200 µs per call.
 * 2. An agent step (scripted model, one tool call per step) vs. the appends that step makes, done
 *    directly (`user/message` once per turn, then `tool/call` + `tool/result` per step), on the plugin
 *    host, in a main session without a task (no reviews at the end of a turn).
 *
 * TOOLS_BENCH_CALLS (default 2,000) calls per round, TOOLS_BENCH_ROUNDS (default 5) rounds, ours and the
 * baseline alternating; the medians are printed.
 */
import { performance } from 'node:perf_hooks'
import { taskStateEnvelope } from '@taskward/protocol'
import { original, type Session } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace, type PluginEntry } from '@taskward/testkit'
import { PLAN } from './supervisor-log'
import { Goals } from './goals'

const goals = new Goals()

const CALLS = Number(process.env.TOOLS_BENCH_CALLS ?? 2_000)
const ROUNDS = Number(process.env.TOOLS_BENCH_ROUNDS ?? 5)
const STEPS_PER_TURN = 50
if (!(Number.isSafeInteger(CALLS) && CALLS > 0 && Number.isSafeInteger(ROUNDS) && ROUNDS > 0)) {
  console.error('TOOLS_BENCH_CALLS and TOOLS_BENCH_ROUNDS must be positive integers.')
  process.exit(1)
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`

async function timed(fn: () => Promise<void>) {
  ;(globalThis as any).gc?.()
  const started = performance.now()
  await fn()
  return performance.now() - started
}

const PLUGINS: PluginEntry[] = [['supervisor', { automaticContinuation: false }], 'workspace', 'recovery', 'admission']

async function boot(plugins: PluginEntry[]) {
  const host = await TestHost.boot({
    plugins,
    database: { driver: 'sqlite', durability: 'os' } as any,
    host: { agents: { maxStepsPerTurn: STEPS_PER_TURN + 1 } },
  })
  host.ctx.tools.register({ name: 'bench_noop', description: 'does nothing', execute: () => 1 })
  return host
}

/** A main session with an active task, written directly so that no reviewer is involved. */
async function activeTask(host: TestHost, session: Session) {
  await host.ctx.commands.input(session, '/task new bench')
  const task = (await host.ctx.supervisor.state(session)).current!
  await host.ctx.supervisor.transact(session, () => ({ records: [taskStateEnvelope({
    ...task, revision: 2, phase: 'active', plan: PLAN, nodeRuns: { a: { attempt: 1, status: 'pending' }, b: { attempt: 1, status: 'pending' }, c: { attempt: 1, status: 'pending' } },
  })], result: undefined }))
}

/** Per call: tools.execute and the same two appends done directly (median of the rounds). */
async function toolCalls(label: string, plugins: PluginEntry[]) {
  const host = await boot(plugins)
  const cwd = await tempWorkspace({})
  try {
    const session = await host.ctx.sessions.create({ cwd })
    if (plugins.length) await activeTask(host, session)
    // How a caller that injects `tools` holds it (the agent does the same).
    const tools = original(host.ctx.tools)
    const appendsOnly = async () => {
      for (let i = 0; i < CALLS; i++) {
        await session.append('tool/call', { callId: `c${i}`, name: 'bench_noop', args: { n: i } })
        await session.append('tool/result', { callId: `c${i}`, name: 'bench_noop', result: 1 })
      }
    }
    const executes = async () => {
      for (let i = 0; i < CALLS; i++) {
        const outcome = await tools.execute(session, 'bench_noop', { n: i })
        if (outcome.error) throw new Error(outcome.error.message)
      }
    }
    for (let i = 0; i < 300; i++) await tools.execute(session, 'bench_noop', { n: i })
    const ours: number[] = []
    const base: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2) {
        ours.push(await timed(executes))
        base.push(await timed(appendsOnly))
      } else {
        base.push(await timed(appendsOnly))
        ours.push(await timed(executes))
      }
    }
    const perCall = median(ours) / CALLS
    const baseline = median(base) / CALLS
    console.log(`${label}: tools.execute ${us(perCall)} per call, the same two appends directly ${us(baseline)}; `
      + `overhead ${us(perCall - baseline)} (goal ≤ 200 µs)`)
    goals.check(`tools.execute overhead, ${label.trim()}`, perCall - baseline <= 0.2, `${us(perCall - baseline)} beyond its appends, goal <= 200 µs`)
  } finally {
    await host.dispose()
    await removeTree(cwd)
  }
}

/** Per step: a turn of STEPS_PER_TURN one-tool steps vs. the appends it makes, done directly. */
async function agentSteps(label: string, plugins: PluginEntry[]) {
  const host = await boot(plugins)
  const cwd = await tempWorkspace({})
  try {
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted' })
    const session = agent.session
    const turns = Math.max(1, Math.round(CALLS / STEPS_PER_TURN))
    const turn = async () => {
      host.scripted.script('main', Array.from({ length: STEPS_PER_TURN }, (_, i) => ({ toolCalls: [{ id: `m${i}`, name: 'bench_noop', args: { n: i } }] })))
      agent.followup('go')
      await agent.whenIdle()
    }
    const ours = async () => {
      for (let t = 0; t < turns; t++) await turn()
    }
    const appendsOnly = async () => {
      for (let t = 0; t < turns; t++) {
        await session.append('user/message', { text: 'go', origin: 'user' })
        for (let i = 0; i < STEPS_PER_TURN; i++) {
          await session.append('tool/call', { callId: `c${i}`, name: 'bench_noop', args: { n: i }, modelCallId: `m${i}` })
          await session.append('tool/result', { callId: `c${i}`, name: 'bench_noop', modelCallId: `m${i}`, result: 1 })
        }
      }
    }
    await turn()
    const steps = turns * STEPS_PER_TURN
    const before = session.seq
    const oursTimes: number[] = []
    const base: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2) {
        oursTimes.push(await timed(ours))
        base.push(await timed(appendsOnly))
      } else {
        base.push(await timed(appendsOnly))
        oursTimes.push(await timed(ours))
      }
    }
    const wrote = session.seq - before
    if (wrote !== 2 * ROUNDS * turns * (1 + 2 * STEPS_PER_TURN)) throw new Error(`the turns wrote ${wrote} events, not what the baseline writes`)
    const perStep = median(oursTimes) / steps
    const baseline = median(base) / steps
    console.log(`${label}: agent step (one tool call) ${us(perStep)} per step, its appends directly ${us(baseline)}; overhead ${us(perStep - baseline)}`)
  } finally {
    await host.dispose()
    await removeTree(cwd)
  }
}

await toolCalls('kernel only                  ', [])
await toolCalls('supervisor+workspace+recovery+admission', PLUGINS)
await agentSteps('supervisor+workspace+recovery+admission', PLUGINS)
goals.report()

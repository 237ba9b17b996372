/**
 * Scale benchmark: what a model step costs the host, and how many agents one host carries. The model
 * is the loopback OpenAI mock playing a competent agent through one-node supervised tasks with their
 * reviews (benchmarks/scale-endpoint.ts), in a process of its own: this process is the host alone.
 * Every figure is set against a baseline measured in the same run:
 *
 *   1. in-turn gap (one session, kernel + supervisor): from the endpoint ending an answer to its
 *      receiving the same turn's next request, durability `fsync` vs `os` (tasks alternate between two
 *      hosts). Goal: fsync ≤ 1.15× os. Per model step: commits, flushes, appends, WAL bytes.
 *   2. throughput (SCALE_SESSIONS, default 50, concurrent tasks, no endpoint delay): steps/s of the
 *      cordis.yml plugin set (recovery included) vs a bare loop — the same SDK sending the same requests
 *      (captured from a task of that set) to the same endpoint, no host — and vs the kernel + supervisor
 *      set. Goals: full ≥ 0.5× bare, full ≥ 0.9× kernel + supervisor. Per step: host CPU ms. The two
 *      sets alternate for SCALE_RATE_ROUNDS rounds (default 3); the round of the median ratio counts.
 *   3. flat per-session cost (SCALE_DELAY_MS, default 500, per answer; SCALE_FLAT sessions, default
 *      1,10,50,200, full set): in-turn gap p99 at 50 and 200 sessions vs at 1 session (goal ≤ 3×) and host
 *      RSS (peak while the tasks run) growth per live session (goal ≤ 1 MB).
 *
 * `npm run bench -- scale --profile`: a CPU profile of the host during the full set's (first) throughput run,
 * top functions by self time, by the nearest project frame, by the chain of project frames, by package
 * (inclusive), and what runs inside cordis by its caller. Throughput and flat runs also print the host's
 * event-loop delay (p99, max): a synchronous stall delays every session at once. A task that pauses
 * (e.g. a review fault) fails the run instead of leaving it waiting. The machine may be shared: the
 * load average is printed with the figures.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import OpenAI from 'openai'
import { Logger } from 'cordis'
import { storeDriver, type Session } from '@taskward/host'
import { RECORD_EVENT_TYPE } from '@taskward/protocol'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { AdmissionService } from '@taskward/plugin-admission'
import { RepairPlugin } from '@taskward/plugin-repair'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { WebConsole } from '@taskward/plugin-console'
import { TestHost, tempWorkspace, removeTree } from '@taskward/testkit'
import { Goals } from './goals'
import { profiled } from './cpu-profile'

const number = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isSafeInteger(value) || value <= 0) {
    console.error(`${name} must be a positive integer.`)
    process.exit(1)
  }
  return value
}
const SESSIONS = number('SCALE_SESSIONS', 50)
const GAP_TASKS = number('SCALE_GAP_TASKS', 4)
const DELAY_MS = number('SCALE_DELAY_MS', 500)
/** Rounds of the throughput comparison: kernel+supervisor and the full set alternate, the median pair counts. */
const RATE_ROUNDS = number('SCALE_RATE_ROUNDS', 3)
const FLAT = (process.env.SCALE_FLAT ?? '1,10,50,200').split(',').map(Number)
if (FLAT.some((n) => !Number.isSafeInteger(n) || n <= 0) || !FLAT.length) {
  console.error('SCALE_FLAT must be a comma-separated list of positive integers, e.g. 1,10,50,200.')
  process.exit(1)
}
const PROFILE = process.argv.includes('--profile')
/** SCALE_PROFILE_FLAT=<sessions>: also profile the flat run with that many sessions (its longest stretches). */
const PROFILE_FLAT = process.env.SCALE_PROFILE_FLAT ? number('SCALE_PROFILE_FLAT', 50) : undefined

const quantile = (values: number[], q: number) => {
  if (!values.length) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]
}
const ms = (value: number) => `${value.toFixed(1)} ms`
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`
const load = () => loadavg().map((value) => value.toFixed(2)).join(' ')

// ---- the endpoint, in its own process ----

interface EndpointStats { served: number, inTurn: number[], sameSession: number[] }

class Endpoint {
  private lines: string[] = []
  private waiters: ((line: string) => void)[] = []
  baseURL = ''
  private readonly child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', fileURLToPath(new URL('./scale-endpoint.ts', import.meta.url))], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })

  async start() {
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const waiter = this.waiters.shift()
      if (waiter) waiter(line)
      else this.lines.push(line)
    })
    const ready = await this.next()
    if (!ready.startsWith('ready ')) throw new Error(`the endpoint said: ${ready}`)
    this.baseURL = ready.slice(6)
    return this
  }

  private next(): Promise<string> {
    const line = this.lines.shift()
    if (line !== undefined) return Promise.resolve(line)
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  async send(command: string) {
    this.child.stdin!.write(command + '\n')
    const answer = await this.next()
    if (answer.startsWith('error')) throw new Error(`endpoint: ${answer}`)
    return answer
  }

  async stats(): Promise<EndpointStats> {
    return JSON.parse((await this.send('stats')).slice(6))
  }

  close() {
    this.child.stdin!.end()
    this.child.kill()
  }
}

// ---- hosts ----

type PluginSet = 'kernel+supervisor' | 'full'

const routeConfig = (baseURL: string) => ({ routes: [{ route: 'endpoint', baseURL, apiKey: 'sk-scale', model: 'scale', maxRetries: 0, timeoutMs: 600_000 }] })
const supervisorConfig = { automaticContinuation: true, progressReviewAfterTurns: 3, reviewerModel: 'openai', defaultModel: 'openai' }

/** A host with one plugin set (`full`: the plugins of cordis.yml, with a check recovery can run). */
async function bootHost(set: PluginSet, baseURL: string, durability: 'fsync' | 'os' = 'fsync') {
  const dataDir = await mkdtemp(join(tmpdir(), 'taskward-scale-'))
  const openai = [OpenAIPlugin, routeConfig(baseURL)] as const
  const supervisor = [SupervisorPlugin, supervisorConfig] as const
  const plugins: any[] = set === 'kernel+supervisor' ? [openai, supervisor] : [
    [WorkspacePlugin, { repairMaxFiles: 10000, repairMaxBytes: 268435456 }], [AdmissionService, {}], openai, supervisor,
    [RepairPlugin, {}], [RecoveryPlugin, { checks: [{ id: 'ok', argv: ['true'] }], sandbox: 'auto', candidateSource: 'workspace' }],
    [WebConsole, { demo: false }],
  ]
  const host = await TestHost.boot({
    dataDir, plugins,
    database: { driver: 'sqlite', path: join(dataDir, 'taskward.db'), durability },
    waitFor: set === 'full' ? ['supervisor', 'workspace', 'repair', 'recovery', 'admission'] : ['supervisor'],
    timeout: 30_000,
  })
  while (!host.ctx.models.routes().includes('openai')) await new Promise((resolve) => setTimeout(resolve, 10))
  // Appends and phase changes, followed as the host's own observers follow them (no polling).
  let appends = 0
  const waiters = new Map<string, () => void>()
  host.ctx.sessions.observe((session, event) => {
    appends++
    if (event.type === RECORD_EVENT_TYPE) waiters.get(session.id)?.()
  })
  const reached = (session: Session, wanted: string) => new Promise<void>((resolve, reject) => {
    const check = () => host.ctx.supervisor.state(session).then(({ current }) => {
      // A paused task waits for a person: fail the run loudly instead of waiting for ever.
      if (current?.phase === 'paused' && wanted !== 'paused') {
        waiters.delete(session.id)
        return reject(new Error(`a task paused (${current.pauseReason}) instead of reaching ${wanted}: the figures of this run are void`))
      }
      if (current?.phase !== wanted) return
      waiters.delete(session.id)
      resolve()
    }, reject)
    waiters.set(session.id, check)
    check()
  })
  /** One supervised one-node task, start to complete, with its plan, stage and completion reviews. */
  const runTask = async () => {
    const cwd = await tempWorkspace({ 'README.md': '# scale\n' })
    const { session } = await host.ctx.supervisor.startSession({ cwd, model: 'openai' })
    const plan = reached(session, 'awaiting-approval')
    await host.ctx.commands.input(session, '/task new write a')
    await plan
    const done = reached(session, 'complete')
    const approved = await host.ctx.commands.input(session, '/task approve')
    if (approved?.error) throw new Error(`/task approve: ${approved.error.message}`)
    await done
    return cwd
  }
  const driver = () => storeDriver(host.ctx) as any
  return {
    host, runTask, appends: () => appends, writeStats: () => driver().writeStats() as { commits: number, flushes: number, walBytes: number },
    async dispose() {
      await host.dispose()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * `count` tasks at once; resolves with the wall time, the peak RSS while they ran, and the host's
 * event-loop delay (p99 and max, ms): a stall there delays every session's next request at once.
 */
async function runTasks(host: Awaited<ReturnType<typeof bootHost>>, count: number) {
  let peak = process.memoryUsage().rss
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 100)
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const cwds = await Promise.all(Array.from({ length: count }, () => host.runTask()))
  const wall = performance.now() - started
  delay.disable()
  clearInterval(sampler)
  await Promise.all(cwds.map((cwd) => removeTree(cwd)))
  return { wall, peak, loopDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 } }
}

// ---- the bare loop: the same SDK, the same requests, no host ----

async function bareLoop(baseURL: string, bodies: any[], loops: number) {
  const client = new OpenAI({ baseURL, apiKey: 'sk-scale', maxRetries: 0, timeout: 600_000 })
  const started = performance.now()
  await Promise.all(Array.from({ length: loops }, async () => {
    for (const body of bodies) {
      const stream = await client.chat.completions.create(body)
      for await (const _ of stream as any);
    }
  }))
  return performance.now() - started
}

// ---- the run ----

Logger.levels.base = 1
const endpoint = await new Endpoint().start()
const goals = new Goals()
const rows: string[][] = [['measure', 'ours', 'baseline', 'ratio']]
const row = (...cells: string[]) => rows.push(cells)
try {
  console.log(`load average at start: ${load()} (2 cores shared: only ratios inside this run count)`)

  // 1. The in-turn gap, fsync vs os, one session; and what a step writes.
  {
    const fsyncHost = await bootHost('kernel+supervisor', endpoint.baseURL, 'fsync')
    const osHost = await bootHost('kernel+supervisor', endpoint.baseURL, 'os')
    // Warm both (module caches, JIT), then alternate tasks between them.
    await endpoint.stats()
    await removeTree(await fsyncHost.runTask())
    await removeTree(await osHost.runTask())
    await endpoint.stats()
    const gaps = { fsync: [] as number[], os: [] as number[] }
    let steps = 0
    const before = fsyncHost.writeStats()
    const appendsBefore = fsyncHost.appends()
    for (let i = 0; i < GAP_TASKS; i++) {
      await removeTree(await fsyncHost.runTask())
      const stats = await endpoint.stats()
      gaps.fsync.push(...stats.inTurn)
      steps += stats.served
      await removeTree(await osHost.runTask())
      gaps.os.push(...(await endpoint.stats()).inTurn)
    }
    const after = fsyncHost.writeStats()
    const appends = fsyncHost.appends() - appendsBefore
    await fsyncHost.dispose()
    await osHost.dispose()
    const [fsyncGap, osGap] = [quantile(gaps.fsync, 0.5), quantile(gaps.os, 0.5)]
    row(`in-turn gap, 1 session, kernel+supervisor (median of ${gaps.fsync.length} / ${gaps.os.length})`, `${ms(fsyncGap)} fsync (p90 ${ms(quantile(gaps.fsync, 0.9))})`, `${ms(osGap)} os (p90 ${ms(quantile(gaps.os, 0.9))})`, `${(fsyncGap / osGap).toFixed(2)}x (goal ≤ 1.15x)`)
    const commits = (after.commits - before.commits) / steps
    const flushes = (after.flushes - before.flushes) / steps
    const walBytes = (after.walBytes - before.walBytes) / steps
    row(`per model step (fsync, ${steps} steps)`, `${(appends / steps).toFixed(1)} appends, ${commits.toFixed(2)} commits, ${flushes.toFixed(2)} flushes`, `${(walBytes / 1024).toFixed(1)} KB of WAL`, '')
    goals.check('in-turn gap with fsync vs os', fsyncGap / osGap <= 1.15, `${(fsyncGap / osGap).toFixed(2)}x, goal <= 1.15x (${ms(fsyncGap)} vs ${ms(osGap)})`)
  }

  // 2. Throughput: the bare loop, the kernel + supervisor set, the full set.
  let profileTop: string[] | undefined
  let profileCallers: string[] | undefined
  let profileChains: string[] | undefined
  let profilePackages: string[] | undefined
  let profileCordis: string[] | undefined
  let profileLongest: string[] | undefined
  let flatLongest: string[] | undefined
  {
    // The requests of one task of the full set, as the bare loop's script.
    const capture = await bootHost('full', endpoint.baseURL)
    await removeTree(await capture.runTask())
    const file = join(tmpdir(), `taskward-scale-bodies-${process.pid}.json`)
    await endpoint.send('capture on')
    await removeTree(await capture.runTask())
    await endpoint.send(`dump ${file}`)
    await capture.dispose()
    const bodies = (JSON.parse(await readFile(file, 'utf8')) as { body: any }[]).map(({ body }) => body)
    await rm(file, { force: true })
    await endpoint.stats()

    await bareLoop(endpoint.baseURL, bodies, 5)
    await endpoint.stats()
    const bareWall = await bareLoop(endpoint.baseURL, bodies, SESSIONS)
    const bareSteps = (await endpoint.stats()).served
    const bareRate = bareSteps / (bareWall / 1000)

    const rate = async (set: PluginSet, profile: boolean) => {
      const host = await bootHost(set, endpoint.baseURL)
      await removeTree(await host.runTask())
      await endpoint.stats()
      const cpuBefore = process.cpuUsage()
      const run = () => runTasks(host, SESSIONS)
      let ran: Awaited<ReturnType<typeof run>>
      if (profile) {
        const { result, top, callers, chains, packages, cordis, longest } = await profiled(run)
        profileCordis = cordis
        profileLongest = longest
        ran = result
        profileTop = top
        profileCallers = callers
        profileChains = chains
        profilePackages = packages
      } else {
        ran = await run()
      }
      const { wall, loopDelay } = ran
      const cpu = process.cpuUsage(cpuBefore)
      const steps = (await endpoint.stats()).served
      await host.dispose()
      return { rate: steps / (wall / 1000), cpuPerStep: (cpu.user + cpu.system) / 1000 / steps, steps, loopDelay }
    }
    // SCALE_PROFILE_SET=kernel+supervisor profiles the baseline set instead (to set the two side by side).
    const profiledSet: PluginSet = process.env.SCALE_PROFILE_SET === 'kernel+supervisor' ? 'kernel+supervisor' : 'full'
    // The machine is shared: its load moves by 2x within a minute. The two sets alternate, round by
    // round, and the round with the median full ÷ kernel+supervisor ratio is the one reported (the
    // profile is taken in the first round only).
    const rounds: { kernel: Awaited<ReturnType<typeof rate>>, full: Awaited<ReturnType<typeof rate>> }[] = []
    for (let round = 0; round < RATE_ROUNDS; round++) {
      const kernel = await rate('kernel+supervisor', PROFILE && round === 0 && profiledSet === 'kernel+supervisor')
      const full = await rate('full', PROFILE && round === 0 && profiledSet === 'full')
      rounds.push({ kernel, full })
    }
    const ratios = rounds.map(({ kernel, full }) => full.rate / kernel.rate)
    const { kernel, full } = [...rounds].sort((a, b) => a.full.rate / a.kernel.rate - b.full.rate / b.kernel.rate)[Math.floor(rounds.length / 2)]
    if (rounds.length > 1) row(`full ÷ kernel+supervisor steps/s, each of ${rounds.length} alternating rounds`, ratios.map((r) => `${r.toFixed(2)}x`).join(', '), '', 'the median round is reported')
    row(`steps/s, ${SESSIONS} concurrent one-node tasks, full set (cordis.yml)`, `${full.rate.toFixed(0)} steps/s (${full.steps} steps)`, `${bareRate.toFixed(0)} steps/s bare loop (same SDK and requests, no host)`, `${(full.rate / bareRate).toFixed(2)}x (goal ≥ 0.5x)`)
    row(`steps/s, ${SESSIONS} concurrent, full set vs kernel+supervisor`, `${full.rate.toFixed(0)} steps/s`, `${kernel.rate.toFixed(0)} steps/s kernel+supervisor`, `${(full.rate / kernel.rate).toFixed(2)}x (goal ≥ 0.9x)`)
    row(`host CPU per model step, ${SESSIONS} concurrent`, `${ms(full.cpuPerStep)} full set`, `${ms(kernel.cpuPerStep)} kernel+supervisor`, '')
    row(`host event-loop delay p99 / max, ${SESSIONS} concurrent`, `${ms(full.loopDelay.p99)} / ${ms(full.loopDelay.max)} full set`, `${ms(kernel.loopDelay.p99)} / ${ms(kernel.loopDelay.max)} kernel+supervisor`, '')
    goals.check('full plugin set vs a bare loop', full.rate / bareRate >= 0.5, `${(full.rate / bareRate).toFixed(2)}x, goal >= 0.5x (${full.rate.toFixed(0)} vs ${bareRate.toFixed(0)} steps/s)`)
    goals.check('full plugin set vs kernel+supervisor', full.rate / kernel.rate >= 0.9, `${(full.rate / kernel.rate).toFixed(2)}x, goal >= 0.9x (${full.rate.toFixed(0)} vs ${kernel.rate.toFixed(0)} steps/s)`)
  }

  // 3. Flat per-session cost: a slow endpoint, more and more sessions.
  {
    await endpoint.send(`delay ${DELAY_MS}`)
    const flat: { sessions: number, p50: number, p99: number, peak: number, rate: number, loopDelay: { p99: number, max: number } }[] = []
    for (const sessions of FLAT) {
      const host = await bootHost('full', endpoint.baseURL)
      await removeTree(await host.runTask())
      await endpoint.stats()
      const run = () => runTasks(host, sessions)
      let ran: Awaited<ReturnType<typeof run>>
      if (PROFILE_FLAT === sessions) {
        const profile = await profiled(run)
        ran = profile.result
        flatLongest = profile.longest
      } else {
        ran = await run()
      }
      const { wall, peak, loopDelay } = ran
      const stats = await endpoint.stats()
      await host.dispose()
      flat.push({ sessions, p50: quantile(stats.inTurn, 0.5), p99: quantile(stats.inTurn, 0.99), peak, rate: stats.served / (wall / 1000), loopDelay })
    }
    await endpoint.send('delay 0')
    const one = flat.find((entry) => entry.sessions === 1) ?? flat[0]
    for (const entry of flat) {
      row(`endpoint ${DELAY_MS} ms/step, ${entry.sessions} sessions: in-turn gap p50 / p99, host RSS peak, event-loop delay p99 / max`,
        `${ms(entry.p50)} / ${ms(entry.p99)}, ${mb(entry.peak)}, loop ${ms(entry.loopDelay.p99)} / ${ms(entry.loopDelay.max)}`,
        `${ms(one.p99)} p99 at ${one.sessions}`, `${(entry.p99 / one.p99).toFixed(2)}x, ${entry.rate.toFixed(0)} steps/s`)
      if (entry.sessions >= 50) goals.check(`in-turn gap p99 at ${entry.sessions} sessions vs ${one.sessions}`, entry.p99 / one.p99 <= 3, `${(entry.p99 / one.p99).toFixed(2)}x, goal <= 3x (${ms(entry.p99)} vs ${ms(one.p99)})`)
    }
    const most = flat.reduce((a, b) => b.sessions > a.sessions ? b : a)
    if (most !== one) {
      const perSession = (most.peak - one.peak) / (most.sessions - one.sessions)
      row(`host RSS growth per live session (${one.sessions} → ${most.sessions})`, `${(perSession / 2 ** 20).toFixed(2)} MB`, '', 'goal ≤ 1 MB')
      goals.check('host RSS growth per live session', perSession <= 2 ** 20, `${(perSession / 2 ** 20).toFixed(2)} MB, goal <= 1 MB (${mb(one.peak)} at ${one.sessions}, ${mb(most.peak)} at ${most.sessions})`)
    }
  }

  const widths = rows[0].map((_, c) => Math.max(...rows.map((cells) => (cells[c] ?? '').length)))
  for (const cells of rows) console.log(cells.map((cell, c) => (cell ?? '').padEnd(widths[c])).join('  '))
  console.log(`load average at end: ${load()}`)
  if (profileTop) {
    console.log(`top self time, host process, ${process.env.SCALE_PROFILE_SET === 'kernel+supervisor' ? 'kernel+supervisor' : 'full'} set, ${SESSIONS} concurrent tasks:`)
    for (const line of profileTop) console.log('  ' + line)
    console.log('the same samples by the nearest frame of the project\'s own code (what pays for the library time):')
    for (const line of profileCallers ?? []) console.log('  ' + line)
    console.log('the same samples by the chain of project frames above them (nearest first):')
    for (const line of profileChains ?? []) console.log('  ' + line)
    console.log('inclusive, by package on the stack (a sample counts for every package it passed through):')
    for (const line of profilePackages ?? []) console.log('  ' + line)
    console.log('samples inside cordis (context getters, tracing proxies, events), by the project frame that called in:')
    for (const line of profileCordis ?? []) console.log('  ' + line)
    console.log('the longest stretches without an idle sample (the project frames most under them):')
    for (const line of profileLongest ?? []) console.log('  ' + line)
  }
  if (flatLongest) {
    console.log(`the longest stretches without an idle sample, endpoint ${DELAY_MS} ms/step, ${PROFILE_FLAT} sessions:`)
    for (const line of flatLongest) console.log('  ' + line)
  }
  goals.report()
} finally {
  endpoint.close()
}

/**
 * The scale benchmark's harness: its model endpoint (a process of its own, benchmarks/scale-endpoint.ts),
 * hosts with one plugin set each, concurrent supervised tasks on them, and the bare loop (the same SDK
 * and requests, no host). benchmarks/scale.bench.ts measures with it.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import OpenAI from 'openai'
import { original, storeDriver, type Session } from '@taskward/host'
import { RECORD_EVENT_TYPE, TASK_NAMESPACE } from '@taskward/protocol'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { AdmissionService } from '@taskward/plugin-admission'
import { RepairPlugin } from '@taskward/plugin-repair'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { WebConsole } from '@taskward/plugin-console'
import { TestHost, tempWorkspace, removeTree } from '@taskward/testkit'

/** The benches' quantile: @taskward/protocol's (one convention with the doctor's figures). */
export { quantile } from '@taskward/protocol'

// ---- the endpoint, in its own process ----

export interface EndpointStats {
  served: number, inTurn: number[], byTool: Record<string, number[]>, sameSession: number[], cpuMs: number, aborted: number
  /** Each aborted request (scale-endpoint.ts `abortedRequests`). */
  abortedWhat?: AbortedRequest[]
  /** Requests still being answered when the stats were read. */
  streaming?: number
  /** The host-added gaps (benchmarks/scale-pace.ts `stepGaps`) by what the answer before each did. */
  hostAdded: Record<string, number[]>
  /** The same gaps by what the answer did and what the request after it was (`review_verdict → main turn start`). */
  hostAddedPairs?: Record<string, number[]>
  /** How many of the gaps end where the host showed a task waiting for a person (scale-pace.ts `StepGaps`): not steps. */
  awaiting?: number
}

/** An aborted request: its role, the step it continued, how long it was open, whether its session went on, its pace. */
export interface AbortedRequest {
  role: string, carried: string, openMs: number, wentOn: boolean, paceMs: number
}

/** One aborted request in words, for the bench's verdict line. */
export function describeAborted({ role, carried, openMs, wentOn, paceMs }: AbortedRequest): string {
  return `a ${role}'s request after ${carried}, closed by the host after ${openMs} ms of the ${paceMs} ms answer (${wentOn ? 'its session went on' : 'its session sent nothing more'})`
}

export class Endpoint {
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

export type PluginSet = 'kernel+supervisor' | 'full'

/**
 * SCALE_MODEL_TRANSPORT: where the hosts' model route runs the SDK — `worker` (unset: the plugin's
 * default, a thread of its own) or `inline` (the host's thread); anything else is refused.
 */
export function modelTransport(value = process.env.SCALE_MODEL_TRANSPORT): 'worker' | 'inline' {
  if (value === undefined || value === '') return 'worker'
  if (value !== 'worker' && value !== 'inline') throw new Error(`SCALE_MODEL_TRANSPORT takes worker (the default) or inline, not ${JSON.stringify(value)}.`)
  return value
}

const routeConfig = (baseURL: string) => ({ routes: [{ route: 'endpoint', baseURL, apiKey: 'sk-scale', model: 'scale', maxRetries: 0, timeoutMs: 600_000 }], transport: modelTransport() })
const supervisorConfig = { automaticContinuation: true, progressReviewAfterTurns: 3, reviewerModel: 'openai', defaultModel: 'openai' }

/** The plugins SCALE_FULL_WITHOUT may drop from the full set. */
export const DROPPABLE = ['workspace', 'admission', 'repair', 'recovery', 'console']

/**
 * The plugins `value` (SCALE_FULL_WITHOUT: comma-separated) drops from the full set, sorted. A name that
 * is not in DROPPABLE is refused: a typo would measure the whole set and print it as the reduced one.
 */
export function droppedPlugins(value = process.env.SCALE_FULL_WITHOUT ?? ''): string[] {
  const names = [...new Set(value.split(',').map((name) => name.trim()).filter(Boolean))].sort()
  const unknown = names.filter((name) => !DROPPABLE.includes(name))
  if (unknown.length) {
    throw new Error(`SCALE_FULL_WITHOUT names ${unknown.map((name) => JSON.stringify(name)).join(', ')}; it takes a comma-separated list of ${DROPPABLE.join(', ')}.`)
  }
  return names
}

/**
 * What rows and goals call the full set as measured: `full set`, or `full set without <dropped>`; with
 * the SDK on the host's thread (SCALE_MODEL_TRANSPORT=inline), `…, SDK inline`.
 */
export function fullSetName(value = process.env.SCALE_FULL_WITHOUT ?? '', transport = process.env.SCALE_MODEL_TRANSPORT): string {
  const dropped = droppedPlugins(value)
  const name = dropped.length ? `full set without ${dropped.join(', ')}` : 'full set'
  return modelTransport(transport) === 'inline' ? `${name}, SDK inline` : name
}

/** A host with one plugin set (`full`: the plugins of cordis.yml, with a check recovery can run). */
export async function bootHost(set: PluginSet, baseURL: string, durability: 'fsync' | 'os' = 'fsync',
  onUserCommand?: (command: { task: string, at: number, what: string, shown?: number }) => Promise<unknown>) {
  const dataDir = await mkdtemp(join(tmpdir(), 'taskward-scale-'))
  const openai = [OpenAIPlugin, routeConfig(baseURL)] as const
  const supervisor = [SupervisorPlugin, supervisorConfig] as const
  const full: [string, any][] = [
    ['workspace', [WorkspacePlugin, { repairMaxFiles: 10000, repairMaxBytes: 268435456 }]], ['admission', [AdmissionService, {}]], ['openai', openai], ['supervisor', supervisor],
    ['repair', [RepairPlugin, {}]], ['recovery', [RecoveryPlugin, { checks: [{ id: 'ok', argv: ['true'] }], sandbox: 'auto', candidateSource: 'workspace' }]],
    ['console', [WebConsole, { demo: false }]],
  ]
  // SCALE_FULL_WITHOUT=recovery,console: the full set less those plugins (what each one costs).
  const without = new Set(droppedPlugins())
  const plugins: any[] = set === 'kernel+supervisor' ? [openai, supervisor] : full.filter(([name]) => !without.has(name)).map(([, plugin]) => plugin)
  const host = await TestHost.boot({
    dataDir, plugins,
    database: { driver: 'sqlite', path: join(dataDir, 'taskward.db'), durability },
    waitFor: set === 'full' ? ['supervisor', 'workspace', 'repair', 'recovery', 'admission'].filter((name) => !without.has(name)) : ['supervisor'],
    timeout: 30_000,
  })
  while (!host.ctx.models.routes().includes('openai')) await new Promise((resolve) => setTimeout(resolve, 10))
  // Appends and phase changes, followed as the host's own observers follow them (no polling). The
  // supervisor read once: through `host.ctx` each read is cordis' getter (a stack capture and a tracing
  // proxy), which this bench's own observer would otherwise charge to the host on every record event.
  const supervisorService = original(host.ctx.supervisor)
  let appends = 0
  const waiters = new Map<string, () => void>()
  /** When each session's task was last recorded awaiting approval (epoch ms): the host showing it to a person. */
  const awaitingSince = new Map<string, number>()
  host.ctx.sessions.observe((session, event) => {
    appends++
    if (event.type === RECORD_EVENT_TYPE && event.data?.namespace === TASK_NAMESPACE && event.data.payload?.phase === 'awaiting-approval') {
      awaitingSince.set(session.id, performance.timeOrigin + performance.now())
    }
    // After the append that announced it has finished (an observer runs inside it): a state read from
    // within could miss the very event that completed the task, and nothing would wake the waiter again.
    if (event.type === RECORD_EVENT_TYPE && waiters.has(session.id)) setImmediate(() => waiters.get(session.id)?.())
  })
  const reached = (session: Session, wanted: string) => new Promise<void>((resolve, reject) => {
    // A safety net: a check that did not find the phase looks once more when the session has been
    // quiet for 2 s (a 500-session run left two complete tasks waiting for ever without it).
    let again: NodeJS.Timeout | undefined
    const check = (late = false) => supervisorService.state(session).then(async ({ current }) => {
      clearTimeout(again)
      // A paused task waits for a person: fail the run loudly instead of waiting for ever, saying why.
      if (current?.phase === 'paused' && wanted !== 'paused') {
        waiters.delete(session.id)
        // The fault is appended just after the pause it explains.
        await new Promise((resolve) => setTimeout(resolve, 500))
        const [fault] = await session.read({ from: Math.max(0, session.seq - 500), limit: 500, types: ['review/fault'] }).then((events) => events.slice(-1))
        return reject(new Error(`a task paused (${current.pauseReason}${fault ? `: ${fault.data?.message}` : ''}) instead of reaching ${wanted}: the figures of this run are void`))
      }
      if (current?.phase !== wanted) {
        if (!late && waiters.get(session.id) === check) again = setTimeout(() => check(true), 2000)
        return
      }
      waiters.delete(session.id)
      resolve()
    }, reject)
    waiters.set(session.id, check)
    check()
  })
  /** One supervised one-node task, start to complete, with its plan, stage and completion reviews. */
  /** The sessions whose task is under way (for `unfinished`). */
  const running = new Map<string, Session>()
  const runTask = async () => {
    const cwd = await tempWorkspace({ 'README.md': '# scale\n' })
    const { session } = await host.ctx.supervisor.startSession({ cwd, model: 'openai' })
    running.set(session.id, session)
    const plan = reached(session, 'awaiting-approval')
    await host.ctx.commands.input(session, '/task new write a')
    await plan
    const done = reached(session, 'complete')
    // A person's click: the agent's next turn is measured from it, not from the review's verdict before it.
    const at = performance.timeOrigin + performance.now()
    const approved = await host.ctx.commands.input(session, '/task approve')
    if (approved?.error) throw new Error(`/task approve: ${approved.error.message}`)
    await onUserCommand?.({ task: session.cwd, at, what: '/task approve', shown: awaitingSince.get(session.id) })
    awaitingSince.delete(session.id)
    await done
    running.delete(session.id)
    return cwd
  }
  /** Where each task still under way stands: its phase, the state of its latest review, its last events' types. */
  const unfinished = async () => Promise.all([...running.values()].map(async (session) => {
    const state = await supervisorService.state(session)
    const { current } = state
    const review = (state as any).reviews?.at?.(-1)
    const last = (await session.read({ from: Math.max(0, session.seq - 6), limit: 6 })).map((event) => event.type)
    return `${session.id.slice(0, 8)}: phase ${current?.phase ?? 'none'}${review ? `, last review job ${JSON.stringify(review).slice(0, 200)}` : ''}, last events ${last.join(' ')}`
  }))
  const driver = () => storeDriver(host.ctx) as any
  return {
    host, runTask, unfinished, appends: () => appends, writeStats: () => driver().writeStats() as { commits: number, flushes: number, walBytes: number },
    async dispose() {
      await host.dispose()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * `count` tasks at once (or started over `spreadMs`); resolves with the wall time, the peak RSS while they ran, and the host's
 * event-loop delay (p99 and max, ms): a stall there delays every session's next request at once. With
 * `tasksEach`, each session runs that many tasks one after another. With `errors`, a task that fails
 * adds its message there and the others run on (else the first failure rejects).
 */
export async function runTasks(host: Awaited<ReturnType<typeof bootHost>>, count: number, spreadMs = 0,
  { tasksEach = 1, errors, deadlineMs }: { tasksEach?: number, errors?: string[], deadlineMs?: number } = {}) {
  let peak = process.memoryUsage().rss
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 100)
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const cwds: string[] = []
  // `spreadMs`: the starts spread evenly over that long (sessions that came at different times), else all at once.
  const all = Promise.all(Array.from({ length: count }, async (_, i) => {
    if (spreadMs) await new Promise((resolve) => setTimeout(resolve, (i * spreadMs) / count))
    for (let task = 0; task < tasksEach; task++) {
      if (!errors) {
        cwds.push(await host.runTask())
        continue
      }
      try {
        cwds.push(await host.runTask())
      } catch (error) {
        errors.push((error as Error).message)
      }
    }
  }))
  // `deadlineMs` (with `errors`): tasks still under way by then are errors, each saying where it stands.
  let timer: NodeJS.Timeout | undefined
  const late = deadlineMs === undefined || !errors ? undefined
    : new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), deadlineMs) })
  if ((await (late ? Promise.race([all, late]) : all)) === 'late') {
    for (const where of await host.unfinished()) errors!.push(`unfinished after ${(deadlineMs! / 1000).toFixed(0)} s: ${where}`)
  }
  clearTimeout(timer)
  const wall = performance.now() - started
  delay.disable()
  clearInterval(sampler)
  await Promise.all(cwds.map((cwd) => removeTree(cwd)))
  return { wall, peak, loopDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 } }
}

// ---- the bare loop: the same SDK, the same requests, no host ----

/**
 * `loops` clients at once (or started over `spreadMs`), each sending `bodies` in order `rounds` times (streamed, read to the end).
 * Each loop names itself in an `x-scale-session` header, so the endpoint tells the loops' steps apart.
 */
export async function bareLoop(baseURL: string, bodies: any[], loops: number, rounds = 1, spreadMs = 0) {
  const client = new OpenAI({ baseURL, apiKey: 'sk-scale', maxRetries: 0, timeout: 600_000 })
  const started = performance.now()
  await Promise.all(Array.from({ length: loops }, async (_, loop) => {
    // `spreadMs`: the loops' starts spread evenly over that long, as `runTasks` spreads the tasks'.
    if (spreadMs) await new Promise((resolve) => setTimeout(resolve, (loop * spreadMs) / loops))
    for (let round = 0; round < rounds; round++) {
      for (const body of bodies) {
        const stream = await client.chat.completions.create(body, { headers: { 'x-scale-session': String(loop) } })
        for await (const _ of stream as any);
      }
    }
  }))
  return performance.now() - started
}

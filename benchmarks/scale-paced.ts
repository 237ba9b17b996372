/**
 * One run of the scale benchmark's paced section, in a process of its own (its RSS peak is its own):
 * an endpoint whose step latency is lognormal (median, p99 and seed given; benchmarks/scale-pace.ts),
 * and either a host with the full plugin set running `sessions` supervised tasks (their starts spread
 * evenly over `spread` ms; `tasks` each, one after another), or the bare loop — the same SDK sending the requests of one captured task of that
 * set, no host — with as many loops. Prints one line, `paced <JSON>` (a PacedResult).
 *
 *   node --import tsx --conditions source --expose-gc benchmarks/scale-paced.ts <host|bare> <sessions> <tasks> <seed> <median ms> <p99 ms> <spread ms> [profile]
 *
 * `pacedRun` (below) is how benchmarks/scale.bench.ts starts it.
 */
import { spawn } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { Logger } from 'cordis'
import { removeTree } from '@taskward/testkit'
import { bareLoop, bootHost, Endpoint, quantile, runTasks, type AbortedRequest, type EndpointStats } from './scale-harness'
import { pacedDurability, splitByChecks, type PaceSpec } from './scale-pace'
import { profiled } from './cpu-profile'

/**
 * The answers whose tool runs recovery's sandboxed checks before the host goes on: the completion gate
 * verifies the candidate inside `task_request_completion`. (The completion review's passing verdict
 * runs the gate too, but no request follows it; stage verifications run in the background and delay
 * no request — their CPU shows in the machine's.)
 */
export const CHECK_TOOLS = ['task_request_completion'] as const

export interface PacedResult {
  kind: 'host' | 'bare'
  sessions: number
  /**
   * Host-added latency per step (scale-pace.ts `stepGaps`), the gaps after answers that run checks left
   * out: p50, p99, and the steps (those gaps less the ones ending where a task awaited a person).
   */
  p50: number
  p99: number
  steps: number
  /** The gaps after answers that run checks, and their share of all the host-added time. */
  checks: { count: number, p50: number, p99: number, share: number }
  /** The host-added gaps by what the answer before them did. */
  byAnswer: Record<string, { count: number, p50: number, p99: number }>
  /** … and by what the request after them was too (`write → in turn`, `review_verdict → main turn start`). */
  byPair: Record<string, { count: number, p50: number, p99: number }>
  /** The narrower in-turn gaps (the request carries the answer's tool result): p50, p99, count. */
  inTurn: { count: number, p50: number, p99: number }
  /** Host RSS peak while the tasks ran, and after the warm-up (bytes; the bare loop's own process for `bare`). */
  peak: number
  idle: number
  served: number
  wall: number
  loopDelay: { p99: number, max: number }
  /**
   * What the run cost the process (host runs: the host, its threads and the harness driving it; the
   * endpoint is a process of its own): CPU (user + system, every thread) and the main thread's busy
   * time (its event loop's active time), both in ms. Steadier from run to run than a tail: the measure
   * of a cut's worth where the p99 moves ±50 % by chance.
   */
  cpu: { processMs: number, loopBusyMs: number }
  /** The host's store over the tasks: commits, and flushes of the WAL (group commit) (host runs). */
  writes?: { commits: number, flushes: number }
  /** Tasks that failed (their messages, the first 5) and requests whose client went away before the answer ended. */
  errors: number
  errorMessages: string[]
  aborted: number
  /** What each aborted request was (the first 5). */
  abortedWhat: AbortedRequest[]
  /** Requests still being answered when the last task completed (a turn the host then ended; not an error). */
  streaming: number
  /** With `profile` (a host run): the top self time, by our nearest frame, and the longest busy stretches. */
  profile?: { top: string[], callers: string[], longest: string[] }
}

/** Run one paced measurement in a fresh Node process; rejects with what it printed when it fails. */
export function pacedRun(kind: 'host' | 'bare', sessions: number, tasks: number, pace: PaceSpec, spreadMs: number, profile = false): Promise<PacedResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', '--expose-gc', fileURLToPath(import.meta.url),
    kind, String(sessions), String(tasks), String(pace.seed), String(pace.medianMs), String(pace.p99Ms), String(spreadMs), ...profile ? ['profile'] : []], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      const line = out.split('\n').find((text) => text.startsWith('paced '))
      if (code === 0 && line) resolve(JSON.parse(line.slice(6)))
      else reject(new Error(`the paced ${kind} run with ${sessions} sessions exited ${code}: ${out.slice(-2000)}`))
    })
  })
}

async function main([kind, ...rest]: string[]) {
  const profile = rest.at(-1) === 'profile'
  const numbers = profile ? rest.slice(0, -1) : rest
  const [sessions, tasks, seed, medianMs, p99Ms, spreadMs] = numbers.map(Number)
  // A task that never ends (nothing paused, nothing in flight) must not hang the bench: by then it is an error.
  const deadlineMs = Number(process.env.SCALE_PACE_DEADLINE_S ?? 600) * 1000
  if (!['host', 'bare'].includes(kind) || ![sessions, tasks, seed, medianMs, p99Ms, spreadMs].every((n) => Number.isSafeInteger(n) && n >= 0) || !sessions || !tasks) {
    throw new Error('usage: scale-paced.ts <host|bare> <sessions> <tasks> <seed> <median ms> <p99 ms> <spread ms> [profile]')
  }
  Logger.levels.base = 1
  const endpoint = await new Endpoint().start()
  try {
    // The harness's approvals, told to the endpoint: the turns they start are measured from them.
    const host = await bootHost('full', endpoint.baseURL, pacedDurability(process.env.SCALE_PACE_DURABILITY), (command) => endpoint.send(`user ${JSON.stringify(command)}`))
    // Warm-up (module caches, JIT) at no delay; for the bare loop, its script: the requests of one task.
    await removeTree(await host.runTask())
    let bodies: any[] = []
    if (kind === 'bare') {
      const file = join(tmpdir(), `taskward-scale-paced-${process.pid}.json`)
      await endpoint.send('capture on')
      await removeTree(await host.runTask())
      await endpoint.send(`dump ${file}`)
      bodies = (JSON.parse(await readFile(file, 'utf8')) as { body: any }[]).map(({ body }) => body)
      await rm(file, { force: true })
      await host.dispose()
      await bareLoop(endpoint.baseURL, bodies, 5)
    }
    await endpoint.send(`pace ${seed} ${medianMs} ${p99Ms}`)
    await endpoint.stats()
    globalThis.gc?.()
    const idle = process.memoryUsage().rss
    const errors: string[] = []
    let ran: { wall: number, peak: number, loopDelay: { p99: number, max: number } }
    let profileOut: PacedResult['profile']
    let stats: EndpointStats | undefined
    // Taken around the tasks alone (not the endpoint's stats, nor the host's stop); with `profile`, the
    // profiler's own cost is in it.
    const cpuBefore = process.cpuUsage()
    const loopBefore = performance.eventLoopUtilization()
    let cpu = { processMs: NaN, loopBusyMs: NaN }
    const cpuUntilNow = () => {
      const used = process.cpuUsage(cpuBefore)
      cpu = { processMs: (used.user + used.system) / 1000, loopBusyMs: performance.eventLoopUtilization(loopBefore).active }
    }
    let writes: PacedResult['writes']
    if (kind === 'host') {
      const before = host.writeStats()
      const run = () => runTasks(host, sessions, spreadMs, { tasksEach: tasks, errors, deadlineMs })
      if (profile) {
        const { result, top, callers, longest } = await profiled(run)
        ran = result
        profileOut = { top, callers, longest }
      } else {
        ran = await run()
      }
      cpuUntilNow()
      const after = host.writeStats()
      writes = { commits: after.commits - before.commits, flushes: after.flushes - before.flushes }
      // Read before the host stops: its dispose cancels the turns still streaming once every task is
      // complete, and those would count as aborted requests.
      stats = await endpoint.stats()
      await host.dispose()
    } else {
      let peak = idle
      const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 100)
      const delay = monitorEventLoopDelay({ resolution: 10 })
      delay.enable()
      try {
        const wall = await bareLoop(endpoint.baseURL, bodies, sessions, tasks, spreadMs)
        cpuUntilNow()
        ran = { wall, peak, loopDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 } }
      } catch (error) {
        errors.push((error as Error).message)
        ran = { wall: NaN, peak, loopDelay: { p99: NaN, max: NaN } }
      } finally {
        delay.disable()
        clearInterval(sampler)
      }
    }
    stats ??= await endpoint.stats()
    const hostAdded = Object.entries(stats.hostAdded).flatMap(([after, gaps]) => gaps.map((gap) => ({ gap, after })))
    const split = splitByChecks(hostAdded, CHECK_TOOLS)
    // The gaps that end where the host showed a task waiting for a person count in the figures, not as steps.
    const steps = split.host.length - (stats.awaiting ?? 0)
    const summary = (gaps: number[]) => ({ count: gaps.length, p50: quantile(gaps, 0.5), p99: quantile(gaps, 0.99) })
    const result: PacedResult = {
      kind: kind as 'host' | 'bare', sessions, p50: quantile(split.host, 0.5), p99: quantile(split.host, 0.99), steps,
      checks: { count: split.checks.length, p50: quantile(split.checks, 0.5), p99: quantile(split.checks, 0.99), share: split.checksShare },
      byAnswer: Object.fromEntries(Object.entries(stats.hostAdded).map(([after, gaps]) => [after, summary(gaps)])),
      byPair: Object.fromEntries(Object.entries(stats.hostAddedPairs ?? {}).map(([pair, gaps]) => [pair, summary(gaps)])), inTurn: summary(stats.inTurn),
      peak: ran.peak, idle, served: stats.served, wall: ran.wall, loopDelay: ran.loopDelay, cpu, ...writes ? { writes } : {},
      errors: errors.length, errorMessages: errors.slice(0, 5), aborted: stats.aborted ?? 0, abortedWhat: (stats.abortedWhat ?? []).slice(0, 5), streaming: stats.streaming ?? 0, ...profileOut ? { profile: profileOut } : {},
    }
    process.stdout.write(`paced ${JSON.stringify(result)}\n`)
  } finally {
    endpoint.close()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2))

/**
 * One run of the scale benchmark's flat section, in a process of its own (so that its RSS peak is its
 * own, not the high-water of the runs before it): an endpoint taking `delay` ms per answer, a host with
 * the full plugin set, one warm-up task, then `sessions` tasks at once (or their starts spread over
 * `spread` ms; fewer than 10 sessions do that for ceil(10 / sessions) rounds, one after another). Prints one line, `flat <JSON>`: the in-turn gap p50 / p99, the RSS peak, steps/s and
 * the event-loop delay; with `profile` also the longest stretches without an idle sample.
 *
 *   node --import tsx --conditions source benchmarks/scale-flat.ts <sessions> <delay> <spread> [profile]
 *
 * `flatRun` (below) is how benchmarks/scale.bench.ts starts it.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Logger } from 'cordis'
import { removeTree } from '@taskward/testkit'
import { bootHost, Endpoint, quantile, runTasks } from './scale-harness'
import { profiled } from './cpu-profile'

export interface FlatResult {
  sessions: number
  p50: number
  p99: number
  peak: number
  /** RSS after the warm-up task, before the measured tasks. */
  idle: number
  rate: number
  /** The endpoint process's CPU per answer (ms): it shares the machine with the host. */
  endpointCpuPerAnswer: number
  loopDelay: { p99: number, max: number }
  /** The in-turn gap p50 / p99 by the tool whose result the next request carries (what the host did in the gap). */
  byTool: Record<string, { count: number, p50: number, p99: number }>
  longest?: string[]
}

/** What `runTasks` measured of one round. */
export interface RoundResult { wall: number, peak: number, loopDelay: { p99: number, max: number } }

/**
 * The rounds of one flat run as one measurement: their summed wall time, the highest loop delays, and
 * the first round's RSS peak — the same work as a one-round size (a warm-up, then one task per live
 * session); a later round's peak also holds what the rounds before it left in the heap, and a baseline
 * raised by it would understate the growth per live session.
 */
export function combineRounds(each: RoundResult[]): RoundResult {
  return {
    wall: each.reduce((sum, r) => sum + r.wall, 0), peak: each[0].peak,
    loopDelay: { p99: Math.max(...each.map((r) => r.loopDelay.p99)), max: Math.max(...each.map((r) => r.loopDelay.max)) },
  }
}

/** Run one flat measurement in a fresh Node process; rejects with what it printed when it fails. */
export function flatRun(sessions: number, delayMs: number, spreadMs: number, profile: boolean): Promise<FlatResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', '--expose-gc', fileURLToPath(import.meta.url),
    String(sessions), String(delayMs), String(spreadMs), ...profile ? ['profile'] : []], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      const line = out.split('\n').find((text) => text.startsWith('flat '))
      if (code === 0 && line) resolve(JSON.parse(line.slice(5)))
      else reject(new Error(`the flat run with ${sessions} sessions exited ${code}: ${out.slice(-2000)}`))
    })
  })
}

async function main([sessionsArg, delayArg, spreadArg, profileArg]: string[]) {
  const [sessions, delayMs, spreadMs] = [Number(sessionsArg), Number(delayArg), Number(spreadArg)]
  if (![sessions, delayMs, spreadMs].every((n) => Number.isSafeInteger(n) && n >= 0) || !sessions) {
    throw new Error('usage: scale-flat.ts <sessions> <delay ms> <spread ms> [profile]')
  }
  Logger.levels.base = 1
  const endpoint = await new Endpoint().start()
  try {
    await endpoint.send(`delay ${delayMs}`)
    const host = await bootHost('full', endpoint.baseURL)
    await removeTree(await host.runTask())
    await endpoint.stats()
    globalThis.gc?.()
    const idle = process.memoryUsage().rss
    // Fewer than 10 sessions run their tasks again, one round after another (still that many live at a
    // time), so that a p99 is not the maximum of a handful of gaps: one task has only 4 in-turn gaps.
    // The RSS peak stays the first round's (see combineRounds).
    const rounds = Math.ceil(10 / sessions)
    const run = async () => {
      const each: RoundResult[] = []
      for (let round = 0; round < rounds; round++) each.push(await runTasks(host, sessions, spreadMs))
      return combineRounds(each)
    }
    let longest: string[] | undefined
    let ran: Awaited<ReturnType<typeof run>>
    if (profileArg === 'profile') {
      const profile = await profiled(run)
      ran = profile.result
      longest = profile.longest
    } else {
      ran = await run()
    }
    const stats = await endpoint.stats()
    await host.dispose()
    const result: FlatResult = {
      sessions, p50: quantile(stats.inTurn, 0.5), p99: quantile(stats.inTurn, 0.99), peak: ran.peak, idle,
      byTool: Object.fromEntries(Object.entries(stats.byTool).map(([tool, gaps]) => [tool, { count: gaps.length, p50: quantile(gaps, 0.5), p99: quantile(gaps, 0.99) }])),
      rate: stats.served / (ran.wall / 1000), endpointCpuPerAnswer: stats.cpuMs / stats.served, loopDelay: ran.loopDelay, ...longest ? { longest } : {},
    }
    process.stdout.write(`flat ${JSON.stringify(result)}\n`)
  } finally {
    endpoint.close()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2))

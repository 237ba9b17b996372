/**
 * The paced section of benchmarks/scale.bench.ts: the full set at each size against an endpoint of
 * lognormal step latency, beside one session and the bare loop at the same concurrency and pace. Each
 * run is a fresh process (benchmarks/scale-paced.ts); the rows go into the bench's table, the goals
 * into its Goals.
 */
import type { Goals } from './goals'
import { pacedDurability, type PaceSpec } from './scale-pace'
import { CHECK_TOOLS, pacedRun, type PacedResult } from './scale-paced'
import { describeAborted, quantile } from './scale-harness'

export interface PacedSectionOptions {
  sizes: number[]
  pace: PaceSpec
  /** Tasks per session, one after another. */
  tasks: number
  /**
   * Host runs at each size and of the 1-session baseline (fresh processes, one after another; default 3):
   * the run of median p99 is reported and judged, the RSS is the median peak.
   */
  repeats?: number
  /** The sessions' starts spread evenly over that long (ms). */
  spreadMs: number
  /** Profile one more host run with that many sessions (SCALE_PROFILE_PACED), out of the figures; printed after the table. */
  profileSessions?: number
  /** The 1-session baseline: its tasks in a row, and the divisor of its pace. */
  oneTasks: number
  oneDivide: number
  /** '' for the full set, else ` (full set without …)`. */
  setName: string
  row: (...cells: string[]) => void
  goals: Goals
}

const ms = (value: number) => `${value.toFixed(1)} ms`
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`

/** `p50 / p99` of a paced result's host-added gaps. */
const gaps = (result: PacedResult) => `${ms(result.p50)} / ${ms(result.p99)}`

/** A run whose figures count: it measured steps and none of its tasks failed nor requests were aborted. */
const sound = (result: PacedResult) => result.steps > 0 && Number.isFinite(result.p99) && !result.errors && !result.aborted

/**
 * The run of median p99 — the upper middle of an even count (never the kinder pick), a run that is not
 * `sound` ranking after every sound one (so it is picked only when half the runs or more are void) —
 * and every run's p99 and busy time per step, in run order.
 */
export function medianRun(results: PacedResult[]): { median: PacedResult, spread: string } {
  const rank = (result: PacedResult) => sound(result) ? result.p99 : Infinity
  const byTail = [...results].sort((a, b) => rank(a) - rank(b))
  // `quantile`'s convention (nearest rank rounded down), applied to the runs themselves.
  const median = byTail[Math.floor(byTail.length / 2)]
  const spread = results.map((result) => result.steps > 0
    ? `${ms(result.p99)} (${ms(result.cpu.loopBusyMs / result.steps)} busy/step)${sound(result) ? '' : ', void'}`
    : 'no step measured').join(', ')
  return { median, spread }
}

export async function pacedSection({ sizes, pace, tasks, repeats = 3, spreadMs, profileSessions, oneTasks, oneDivide, setName, row, goals }: PacedSectionOptions): Promise<string[]> {
  const durability = pacedDurability(process.env.SCALE_PACE_DURABILITY)
  const paceName = `lognormal median ${pace.medianMs} ms, p99 ${pace.p99Ms} ms, seed ${pace.seed}${durability === 'fsync' ? '' : `; store durability ${durability}`}`
  const onePace = { ...pace, medianMs: Math.max(1, Math.round(pace.medianMs / oneDivide)), p99Ms: Math.max(2, Math.round(pace.p99Ms / oneDivide)) }
  const started = Date.now()
  /** Runs that could not finish at all (the process failed): named among the problems, the others go on. */
  const failures: string[] = []
  const repeated = async (count: number, start: () => Promise<PacedResult>) => {
    const results: PacedResult[] = []
    for (let run = 0; run < count; run++) {
      try {
        results.push(await start())
      } catch (error) {
        failures.push((error as Error).message.slice(0, 500))
      }
    }
    return results
  }
  // The baseline the goal divides by is a median too: one run of it moves as much as the others.
  const ones = await repeated(repeats, () => pacedRun('host', 1, oneTasks, onePace, 0))
  if (!ones.length) throw new Error(`every 1-session paced run failed: ${failures.join('; ')}`)
  const { median: one, spread: oneSpread } = medianRun(ones)
  const runs: { host: PacedResult, bare: PacedResult, all: PacedResult[], profiled: PacedResult[], spread: string, peak: number }[] = []
  for (const sessions of sizes) {
    // The profiled run is one more of its own (the profiler's cost would skew the median), out of every figure but its profile.
    const all = await repeated(repeats, () => pacedRun('host', sessions, tasks, pace, spreadMs))
    const profiled = sessions === profileSessions ? await repeated(1, () => pacedRun('host', sessions, tasks, pace, spreadMs, true)) : []
    const bare = await pacedRun('bare', sessions, tasks, pace, spreadMs)
    if (!all.length) {
      row(`  ${sessions} sessions: every host run failed`, '', '', '')
      goals.check(`paced host-added p99 at ${sessions} sessions vs 1${setName}`, false, `every run failed: ${failures.slice(-repeats).join('; ')}`)
      continue
    }
    const { median, spread } = medianRun(all)
    // RSS: the median peak of the runs at this size, not the peak of the run picked for its p99.
    runs.push({ host: { ...median, profile: profiled[0]?.profile }, bare, all, profiled, spread, peak: quantile(all.map((result) => result.peak), 0.5) })
  }
  row(`paced endpoint (${paceName}): host-added latency per step (answer's end → the next request it leads to), p50 / p99`, 'full set', 'bare loop (same SDK and requests, no host)', `p99 ÷ 1 session's (${ms(one.p99)})`)
  row(`  1 session, ${oneTasks} tasks in a row at the pace ÷ ${oneDivide} (${one.steps} steps)`, gaps(one), '', '1.00x')
  if (ones.length > 1) row(`    the run of median p99 of ${ones.length}; each run's p99 (main-thread busy per step), in run order`, oneSpread, '', '')
  const problems: string[] = failures.map((failure) => `a paced run failed: ${failure}`)
  for (const { host, bare } of [...ones.map((host) => ({ host, bare: undefined })), ...runs.flatMap(({ all, profiled, bare }) => [...all, ...profiled].map((host, index) => ({ host, bare: index ? undefined : bare })))]) {
    if (host.errors) problems.push(`${host.errors} task(s) failed at ${host.sessions} sessions: ${host.errorMessages.join('; ')}`)
    if (host.aborted) problems.push(`${host.aborted} request(s) aborted at ${host.sessions} sessions: ${host.abortedWhat.map(describeAborted).join('; ')}`)
    if (bare?.errors) problems.push(`the bare loop failed at ${bare.sessions} sessions: ${bare.errorMessages.join('; ')}`)
    if (bare?.aborted) problems.push(`${bare.aborted} bare-loop request(s) aborted at ${bare.sessions} sessions: ${bare.abortedWhat.map(describeAborted).join('; ')}`)
  }
  for (const { host, bare, all, spread, peak } of runs) {
    row(`  ${host.sessions} sessions × ${tasks} task${tasks > 1 ? 's' : ''}, started over ${(spreadMs / 1000).toFixed(0)} s (${host.steps} steps, ${(host.wall / 1000).toFixed(0)} s, ${(host.served / (host.wall / 1000)).toFixed(0)} steps/s${host.streaming ? `; ${host.streaming} turn${host.streaming > 1 ? 's' : ''} still streaming when the last task completed, ended by the host's stop` : ''})`,
      gaps(host), `${gaps(bare)} (${bare.steps} steps)`, `${(host.p99 / one.p99).toFixed(2)}x (goal ≤ 3x and ≤ 50 ms)`)
    if (all.length > 1) row(`    the run of median p99 of ${all.length}; each run's p99 (main-thread busy per step), in run order`, spread, '', '')
    row(`    after the completion gate's checks (${CHECK_TOOLS.join(', ')}): p50 / p99, share of host-added time`,
      `${ms(host.checks.p50)} / ${ms(host.checks.p99)}, ${(100 * host.checks.share).toFixed(0)} %`, `${ms(bare.checks.p50)} / ${ms(bare.checks.p99)}`, 'reported, no goal')
    row(`    in-turn only (the request carries the answer's tool result): p50 / p99`, `${ms(host.inTurn.p50)} / ${ms(host.inTurn.p99)}`, `${ms(bare.inTurn.p50)} / ${ms(bare.inTurn.p99)}`, '')
    row(`    host RSS peak (idle), event-loop delay p99 / max${all.length > 1 ? ` (the peak: the median of the ${all.length} runs')` : ''}`, `${mb(peak)} (${mb(host.idle)}), loop ${ms(host.loopDelay.p99)} / ${ms(host.loopDelay.max)}`,
      `${((peak - host.idle) / host.sessions / 2 ** 20).toFixed(2)} MB per live session over idle`, '')
    row(`    host CPU per step: every thread / the main thread's busy time (share of the run)`,
      `${ms(host.cpu.processMs / host.steps)} / ${ms(host.cpu.loopBusyMs / host.steps)} (${(100 * host.cpu.loopBusyMs / host.wall).toFixed(0)} %)`,
      `${ms(bare.cpu.processMs / bare.steps)} / ${ms(bare.cpu.loopBusyMs / bare.steps)}`, 'reported, no goal')
    if (host.writes) {
      row(`    the store: commits / flushes of the WAL per measured step (one flush covers the commits made before it began${durability === 'os' ? '; durability os flushes nothing' : ''})`,
        `${(host.writes.commits / host.steps).toFixed(2)} / ${(host.writes.flushes / host.steps).toFixed(2)}`, '', 'reported, no goal')
    }
    row(`    … by what the answer before the gap did (p50 / p99)`,
      Object.entries(host.byAnswer).map(([after, gap]) => `${after} ×${gap.count}: ${ms(gap.p50)} / ${ms(gap.p99)}`).join('; '), '', '')
    // Where the tail is: the pairs (what the answer did → what came next) with the highest p99, of those seen 20 times or more.
    const worst = Object.entries(host.byPair).filter(([, gap]) => gap.count >= 20).sort((a, b) => b[1].p99 - a[1].p99).slice(0, 5)
    row(`    … the slowest by p99, by what came next (p50 / p99)`, worst.map(([pair, gap]) => `${pair} ×${gap.count}: ${ms(gap.p50)} / ${ms(gap.p99)}`).join('; '), '', '')
    goals.check(`paced host-added p99 at ${host.sessions} sessions vs 1${setName}${durability === 'fsync' ? '' : ` (durability ${durability})`}`, host.p99 <= 3 * one.p99 && host.p99 <= 50,
      `${ms(host.p99)}${all.length > 1 ? ` (the median of ${all.length} runs: ${all.map((result) => ms(result.p99)).join(', ')})` : ''}, ${(host.p99 / one.p99).toFixed(2)}x the 1-session ${ms(one.p99)}${ones.length > 1 ? ` (the median of ${ones.length})` : ''}; goal <= 3x and <= 50 ms`)
  }
  // RSS per live session: the slope of the peak between the smallest and the largest size (what one
  // more live session adds, without the fixed growth any run has over its idle host: JIT, buffers, the
  // heap's slack), as the flat section measures it against 1 session.
  const sorted = [...runs].sort((a, b) => a.host.sessions - b.host.sessions)
  const [least, most] = [sorted[0], sorted.at(-1)]
  if (least && most && most.host.sessions > least.host.sessions) {
    const perSession = (most.peak - least.peak) / (most.host.sessions - least.host.sessions)
    row(`  host RSS growth per live session (peak at ${least.host.sessions} → ${most.host.sessions})`, `${(perSession / 2 ** 20).toFixed(2)} MB`, '', 'goal ≤ 1 MB')
    goals.check(`paced host RSS growth per live session${setName}`, perSession <= 2 ** 20,
      `${(perSession / 2 ** 20).toFixed(2)} MB, goal <= 1 MB (${mb(least.peak)} at ${least.host.sessions}, ${mb(most.peak)} at ${most.host.sessions})`)
  }
  goals.check(`paced runs without errors${setName}`, !problems.length, problems.length ? problems.join('; ') : 'no task failed, no request aborted')
  row(`  (the paced section took ${((Date.now() - started) / 1000).toFixed(0)} s)`, '', '', '')
  const profiled = runs.find(({ host }) => host.profile)?.host
  if (!profiled?.profile) return []
  const { top, callers, longest } = profiled.profile
  return [
    `paced, ${profiled.sessions} sessions, host process: top self time`, ...top.map((line) => '  ' + line),
    'the same samples by the nearest frame of the project\'s own code:', ...callers.map((line) => '  ' + line),
    'the longest stretches without an idle sample (each delays every session waiting on the host):', ...longest.map((line) => '  ' + line),
  ]
}

/**
 * Check launcher benchmark: what starting one recovery check costs the host process when the host is
 * big. A fork copies the page tables of the whole address space, so from a host of a few hundred MB
 * (LAUNCHER_BENCH_MB, default 300, held in live buffers) every spawn costs it milliseconds of kernel CPU
 * and stalls its event loop. In the same run, alternating, LAUNCHER_BENCH_CHECKS (default 30) each:
 *   - ours:     `runCheck` of `true` (copy sandbox), started by the launcher process
 *   - baseline: `spawn('true')` from the host itself, as any in-process spawn (thread or loop) costs
 * Printed: host CPU (user + system) per check, wall per check, event-loop delay max. Goal: ours ≤ 0.2×
 * the baseline's host CPU per check.
 *
 * Where bubblewrap is installed, also what one whole sandboxed check costs the machine (every process,
 * /proc/stat), alternating, LAUNCHER_BENCH_CHECKS each: a whole check of `true` as recovery runs it (its
 * copy made, run in bubblewrap, copy removed), bubblewrap alone running `true` with the same argv, and
 * `true` alone, both started by the launcher as checks are — so the share of the sandbox itself shows (printed, no goal: the namespaces and mounts
 * are the kernel's work, not ours).
 */
import { spawn } from 'node:child_process'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { bwrapArgv, findOnPath, hiddenDirectories, prepareArea, removeArea, runCheck } from '@taskward/plugin-recovery'
import { removeTree, tempWorkspace } from '@taskward/testkit'
import { Goals } from './goals'
import { machineBusyMs } from './machine-cpu'

const MB = Number(process.env.LAUNCHER_BENCH_MB ?? 300)
const CHECKS = Number(process.env.LAUNCHER_BENCH_CHECKS ?? 30)
if (!(MB >= 0 && Number.isSafeInteger(CHECKS) && CHECKS > 0)) {
  console.error('LAUNCHER_BENCH_MB must be a number ≥ 0 and LAUNCHER_BENCH_CHECKS a positive integer.')
  process.exit(1)
}

// The host's heap stand-in: touched pages, as a host's live sessions are.
const ballast = Array.from({ length: MB }, () => Buffer.alloc(1 << 20, 1))
const cwd = await tempWorkspace({ 'README.md': '# launcher\n' })
const area = await prepareArea(cwd, false)

const viaLauncher = () => runCheck({ id: 'true', argv: ['true'], timeoutMs: 10_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
const inHost = () => new Promise<void>((resolve, reject) => spawn('true', { stdio: 'ignore' }).on('error', reject).on('exit', () => resolve()))

async function measure(one: () => Promise<unknown>) {
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  const cpu = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < CHECKS; i++) await one()
  const wall = (performance.now() - started) / CHECKS
  const used = process.cpuUsage(cpu)
  delay.disable()
  return { cpu: (used.user + used.system) / 1000 / CHECKS, system: used.system / 1000 / CHECKS, wall, loopMax: delay.max / 1e6 }
}

/** Machine CPU and wall per run of `one`, over CHECKS runs. */
async function machineCost(one: () => Promise<unknown>) {
  const busy = machineBusyMs()
  const started = performance.now()
  for (let i = 0; i < CHECKS; i++) await one()
  return { machine: (machineBusyMs() - busy) / CHECKS, wall: (performance.now() - started) / CHECKS }
}

async function sandboxCost(ms: (value: number) => string) {
  const hidden = await hiddenDirectories()
  const argv = await bwrapArgv(area, ['true'], hidden)
  // Each through the launcher, as checks run (a spawn from this big process would cost its fork too).
  const launched = (checkArgv: string[]) => async () => {
    const run = await runCheck({ id: 'part', argv: checkArgv, timeoutMs: 10_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
    if (run.exitCode !== 0) throw new Error(`${checkArgv[0]} failed: ${JSON.stringify(run)}`)
  }
  const whole = async () => {
    const own = await prepareArea(cwd, false)
    try {
      const run = await runCheck({ id: 'true', argv: ['true'], timeoutMs: 10_000 }, own, { sandbox: 'bwrap', outputLimitBytes: 4096, hidden })
      if (run.exitCode !== 0) throw new Error(`the sandboxed check failed: ${JSON.stringify(run)}`)
    } finally {
      await removeArea(own)
    }
  }
  const parts = { whole, bwrap: launched(argv), bare: launched(['true']) }
  const runs: Record<keyof typeof parts, { machine: number, wall: number }[]> = { whole: [], bwrap: [], bare: [] }
  await whole()
  for (let round = 0; round < 3; round++) {
    for (const [name, one] of Object.entries(parts)) runs[name as keyof typeof parts].push(await machineCost(one))
  }
  const median = (each: { machine: number, wall: number }[]) => [...each].sort((x, y) => x.machine - y.machine)[1]
  const [w, b, t] = [median(runs.whole), median(runs.bwrap), median(runs.bare)]
  console.log(`machine CPU per sandboxed check (every process): ${ms(w.machine)} whole check (copy, bubblewrap, removal; wall ${ms(w.wall)}) `
    + `vs ${ms(b.machine)} bubblewrap alone running true (wall ${ms(b.wall)}) vs ${ms(t.machine)} true alone (wall ${ms(t.wall)}); `
    + `bubblewrap is ${(100 * (b.machine - t.machine) / w.machine).toFixed(0)} % of a whole check`)
}

const goals = new Goals()
try {
  // Warm both paths (the launcher process starts on first use: the host's one fork for it).
  await viaLauncher()
  await inHost()
  const ours = [], baseline = []
  for (let round = 0; round < 3; round++) {
    ours.push(await measure(viaLauncher))
    baseline.push(await measure(inHost))
  }
  const median = (runs: { cpu: number }[]) => [...runs].sort((a, b) => a.cpu - b.cpu)[1]
  const a = median(ours) as Awaited<ReturnType<typeof measure>>
  const b = median(baseline) as Awaited<ReturnType<typeof measure>>
  const ms = (value: number) => `${value.toFixed(2)} ms`
  console.log(`host RSS ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB (${ballast.length} MB ballast), ${CHECKS} checks per round, median of 3 rounds`)
  console.log(`host CPU per check: ${ms(a.cpu)} via the launcher (system ${ms(a.system)}) vs ${ms(b.cpu)} spawned in the host (system ${ms(b.system)}): ${(a.cpu / b.cpu).toFixed(2)}x`)
  console.log(`wall per check: ${ms(a.wall)} vs ${ms(b.wall)}; host event-loop delay max: ${ms(a.loopMax)} vs ${ms(b.loopMax)}`)
  goals.check('host CPU per check, launcher vs spawn in the host', a.cpu <= 0.2 * b.cpu, `${(a.cpu / b.cpu).toFixed(2)}x, goal <= 0.2x (${ms(a.cpu)} vs ${ms(b.cpu)})`)
  if (await findOnPath('bwrap')) await sandboxCost(ms)
  else console.log('bubblewrap is not installed: the sandboxed check cost is not measured (apt-get install bubblewrap)')
} finally {
  await removeArea(area)
  await removeTree(cwd)
}
goals.report()
process.exit()

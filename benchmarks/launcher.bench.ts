/**
 * Check launcher benchmark: what starting one recovery check costs the host process when the host is
 * big. A fork copies the page tables of the whole address space, so from a host of a few hundred MB
 * (LAUNCHER_BENCH_MB, default 300, held in live buffers) every spawn costs it milliseconds of kernel CPU
 * and stalls its event loop. In the same run, alternating, LAUNCHER_BENCH_CHECKS (default 30) each:
 *   - ours:     `runCheck` of `true` (copy sandbox), started by the launcher process
 *   - baseline: `spawn('true')` from the host itself, as any in-process spawn (thread or loop) costs
 * Printed: host CPU (user + system) per check, wall per check, event-loop delay max. Goal: ours ≤ 0.2×
 * the baseline's host CPU per check.
 */
import { spawn } from 'node:child_process'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { prepareArea, removeArea, runCheck } from '@taskward/plugin-recovery'
import { removeTree, tempWorkspace } from '@taskward/testkit'
import { Goals } from './goals'

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
} finally {
  await removeArea(area)
  await removeTree(cwd)
}
goals.report()
process.exit()

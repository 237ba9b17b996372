/**
 * Workspace stamp benchmark. Generates a tree of WORKSPACE_BENCH_FILES files (default 10,000) totalling
 * WORKSPACE_BENCH_MB MiB (default 256) of mixed sizes in a temp directory, then times, in the same run:
 *   - ours:     `stampWorkspace` (two full captures, as the plugin always does)
 *   - baseline: `find <root> -type f -print0 | xargs -0 sha256sum` (one pass)
 * Both run once untimed first so that both read from a warm page cache, then ROUNDS times alternately;
 * the medians are reported. Goal: ours within 2.1x the baseline (issue 12; both passes of ours are read
 * from the warm page cache, so two passes cost less than twice the baseline's one).
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveStampLimits } from '@taskward/protocol'
import { stampWorkspace } from '@taskward/plugin-workspace'
import { Goals } from './goals'

const MiB = 1024 * 1024
const FILES = Number(process.env.WORKSPACE_BENCH_FILES ?? 10_000)
const TOTAL_BYTES = Math.round(Number(process.env.WORKSPACE_BENCH_MB ?? 256) * MiB)
const ROUNDS = Number(process.env.WORKSPACE_BENCH_ROUNDS ?? 3)
const FILES_PER_DIRECTORY = 100

if (!(Number.isSafeInteger(FILES) && FILES > 0 && TOTAL_BYTES > 0 && ROUNDS > 0)) {
  console.error('WORKSPACE_BENCH_FILES, WORKSPACE_BENCH_MB and WORKSPACE_BENCH_ROUNDS must be positive numbers.')
  process.exit(1)
}

/** A small deterministic PRNG, so every run builds the same tree shape. */
function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Sizes: ~90% small, ~9.6% medium, ~0.4% large (at least one), scaled to add up to TOTAL_BYTES. */
function fileSizes(): number[] {
  const random = mulberry32(42)
  const large = Math.max(1, Math.round(FILES * 0.004))
  const medium = Math.round(FILES * 0.096)
  const weights = Array.from({ length: FILES }, (_, i) => {
    if (i % Math.ceil(FILES / large) === 0) return 256 + random() * 768
    if (i % 10 === 5 && medium) return 4 + random() * 60
    return random()
  })
  const sum = weights.reduce((a, b) => a + b, 0)
  const sizes = weights.map((w) => Math.floor((TOTAL_BYTES * w) / sum))
  sizes[0] += TOTAL_BYTES - sizes.reduce((a, b) => a + b, 0)
  return sizes
}

function generateTree(root: string, sizes: number[]) {
  const pool = randomBytes(4 * MiB)
  let directories = 0
  sizes.forEach((size, i) => {
    const directory = join(root, `d${String(Math.floor(i / FILES_PER_DIRECTORY)).padStart(3, '0')}`)
    if (i % FILES_PER_DIRECTORY === 0) {
      mkdirSync(directory)
      directories++
    }
    const content = Buffer.allocUnsafe(size)
    for (let at = 0; at < size; at += pool.length) pool.copy(content, at, (i * 7919) % 1024, Math.min(pool.length, (i * 7919) % 1024 + size - at))
    if (size >= 8) content.writeUInt32BE(i, 0)
    writeFileSync(join(directory, `f${String(i).padStart(5, '0')}.bin`), content)
  })
  return directories
}

function baseline(root: string): number {
  const started = performance.now()
  const result = spawnSync('sh', ['-c', 'find "$1" -type f -print0 | xargs -0 sha256sum > /dev/null', 'sh', root], { stdio: ['ignore', 'ignore', 'inherit'] })
  const elapsed = performance.now() - started
  if (result.status !== 0) throw new Error(`baseline failed with status ${result.status}`)
  return elapsed
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const mib = (bytes: number) => (bytes / MiB).toFixed(1)

const root = mkdtempSync(join(tmpdir(), 'taskward-workspace-bench-'))
try {
  const sizes = fileSizes()
  const generated = performance.now()
  const directories = generateTree(root, sizes)
  console.log(`tree: ${FILES} files in ${directories} directories, ${mib(TOTAL_BYTES)} MiB `
    + `(largest ${mib(Math.max(...sizes))} MiB, median ${(median(sizes) / 1024).toFixed(1)} KiB), generated in ${((performance.now() - generated) / 1000).toFixed(1)} s`)

  // The limits are the defaults except for entries: 10,000 files plus their directories pass 10,000.
  const limits = resolveStampLimits({}, { maxFiles: FILES + directories, maxBytes: Math.max(TOTAL_BYTES, 1) })
  globalThis.gc?.()
  const rssBefore = process.memoryUsage().rss
  let peakRss = rssBefore
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss) }, 5)

  const stamp = await stampWorkspace(root, limits) // warm-up, untimed
  if (stamp.files !== FILES || stamp.bytes !== TOTAL_BYTES) throw new Error(`stamp saw ${stamp.files} files / ${stamp.bytes} bytes`)
  baseline(root) // warm-up, untimed

  const ours: number[] = []
  const theirs: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now()
    const again = await stampWorkspace(root, limits)
    ours.push(performance.now() - started)
    if (again.digest !== stamp.digest) throw new Error('the digest changed between rounds')
    theirs.push(baseline(root))
  }
  clearInterval(sampler)
  peakRss = Math.max(peakRss, process.memoryUsage().rss)

  const ratio = median(ours) / median(theirs)
  const rows = [
    ['stamp (double capture)', `${median(ours).toFixed(0)} ms`, ours.map((t) => t.toFixed(0)).join(' / ')],
    ['find | xargs sha256sum (one pass)', `${median(theirs).toFixed(0)} ms`, theirs.map((t) => t.toFixed(0)).join(' / ')],
    ['ratio (goal <= 2.1)', ratio.toFixed(2), ''],
    ['peak RSS while stamping', `${mib(peakRss)} MiB`, `${mib(rssBefore)} MiB before the first stamp (sampled every 5 ms)`],
    ['peak RSS of the process (maxRSS)', `${mib(process.resourceUsage().maxRSS * 1024)} MiB`, 'includes tree generation'],
  ]
  const width = Math.max(...rows.map((row) => row[0].length))
  console.log(`\n${'measure'.padEnd(width)}  median      rounds`)
  for (const [name, value, detail] of rows) console.log(`${name.padEnd(width)}  ${value.padEnd(10)}  ${detail}`)
  console.log(`\ndigest ${stamp.digest}`)
  const goals = new Goals()
  goals.check('stamp vs find | xargs sha256sum', ratio <= 2.1, `${ratio.toFixed(2)}x, goal <= 2.1x`)
  goals.report()
} finally {
  rmSync(root, { recursive: true, force: true })
}

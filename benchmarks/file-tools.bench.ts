/**
 * File tools benchmark, on a real host and real files, against baselines in the same run:
 *   1. read:  FILE_BENCH_FILES (default 300) `read` tool calls vs. `fs.readFile` of the same files.
 *             The gap is the tool call (two events per call) plus the component-wise O_NOFOLLOW open.
 *   2. write: as many `write` tool calls (overwrites) vs. `fs.writeFile` of the same files.
 *   3. grep:  one `grep` call over all files (re2js in a worker thread) vs. `fs.readFile` and a native
 *             RegExp per line on the main thread (the engine a model's pattern can freeze the host with).
 * Each measure runs FILE_BENCH_ROUNDS times (default 3) and reports the median.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

const FILES = Number(process.env.FILE_BENCH_FILES ?? 300)
const ROUNDS = Number(process.env.FILE_BENCH_ROUNDS ?? 3)
if (!(Number.isSafeInteger(FILES) && FILES > 0 && Number.isSafeInteger(ROUNDS) && ROUNDS > 0)) {
  console.error('FILE_BENCH_FILES and FILE_BENCH_ROUNDS must be positive integers.')
  process.exit(1)
}

const PATTERN = 'TODO\\(\\w+\\)'
const content = (i: number) => Array.from({ length: 40 }, (_, line) => line === i % 40
  ? `// TODO(owner${i}) check this later`
  : `export const value${line} = compute(${i}, ${line}) // plain line of code`).join('\n') + '\n'
const paths = Array.from({ length: FILES }, (_, i) => `src/dir${i % 20}/file${i}.ts`)

async function timed(fn: () => Promise<unknown>): Promise<number> {
  (globalThis as any).gc?.()
  const start = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - start) / 1e6
}

function median(values: number[]) {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
}

const host = await TestHost.boot()
const cwd = await tempWorkspace({})
try {
  for (let d = 0; d < 20; d++) await mkdir(join(cwd, 'src', `dir${d}`), { recursive: true })
  await Promise.all(paths.map((path, i) => writeFile(join(cwd, path), content(i))))
  const session = await host.ctx.sessions.create({ cwd })
  const call = async (name: string, args: object) => {
    const outcome = await host.ctx.tools.execute(session, name, args)
    if (outcome.error) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
    return outcome.result
  }
  const regexp = new RegExp(PATTERN)
  const rows: string[][] = [['measure', 'ours', 'baseline', 'ratio']]
  const measures: [string, () => Promise<unknown>, string, () => Promise<unknown>][] = [
    [`read ${FILES} files`, async () => { for (const path of paths) await call('read', { path }) },
      'fs.readFile', async () => { for (const path of paths) await readFile(join(cwd, path), 'utf8') }],
    [`write ${FILES} files`, async () => { for (const [i, path] of paths.entries()) await call('write', { path, content: content(i) }) },
      'fs.writeFile', async () => { for (const [i, path] of paths.entries()) await writeFile(join(cwd, path), content(i)) }],
    [`grep ${FILES} files`, async () => {
      const result = await call('grep', { pattern: PATTERN })
      if (result.matches.length !== Math.min(FILES, 200)) throw new Error(`grep found ${result.matches.length}`)
    }, 'readFile + RegExp', async () => {
      let found = 0
      for (const path of [...paths].sort()) {
        for (const line of (await readFile(join(cwd, path), 'utf8')).split('\n')) if (regexp.test(line) && found < 200) found++
        if (found >= 200) break
      }
    }],
  ]
  for (const [name, ours, baselineName, baseline] of measures) {
    const a: number[] = []
    const b: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      a.push(await timed(ours))
      b.push(await timed(baseline))
    }
    const [oursMs, baseMs] = [median(a), median(b)]
    rows.push([`${name} (median of ${ROUNDS})`, `${oursMs.toFixed(0)} ms`, `${baseMs.toFixed(0)} ms ${baselineName}`, `${(oursMs / baseMs).toFixed(1)}x`])
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)))
  for (const row of rows) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '))
} finally {
  await host.dispose()
  await removeTree(cwd)
}

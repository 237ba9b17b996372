/**
 * `npm run bench`: runs every `benchmarks/*.bench.ts` (or those named on the command line) in its own
 * Node process, one after another, so that each one's peak memory is its own. Each bench prints its
 * figures next to a baseline measured in the same run; this runner only sequences them.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HOST_THREADPOOL_SIZE } from '../packages/host/src/store/threadpool'

const here = dirname(fileURLToPath(import.meta.url))
// Names pick benchmarks; `--flags` go to each benchmark run (e.g. `npm run bench -- scale --profile`).
const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('--'))
const flags = process.argv.slice(2).filter((arg) => arg.startsWith('--'))
const files = readdirSync(here)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => !wanted.length || wanted.some((w) => name.includes(w)))
  .sort()

if (!files.length) {
  console.error(`No benchmark matches ${wanted.join(', ')}. Available: ${readdirSync(here).filter((n) => n.endsWith('.bench.ts')).join(', ')}`)
  process.exit(1)
}

// The benchmarks measure the host as `npm start` runs it: with its libuv threadpool (store/threadpool.ts).
const env = { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE || String(HOST_THREADPOOL_SIZE) }
console.log(`file-system threads: ${env.UV_THREADPOOL_SIZE} (UV_THREADPOOL_SIZE${process.env.UV_THREADPOOL_SIZE ? ', set by you' : ', as npm start sets it'})`)
let failed = 0
for (const name of files) {
  console.log(`\n== ${name} ==`)
  const started = Date.now()
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--conditions', 'source', '--expose-gc', join(here, name), ...flags], {
    stdio: 'inherit', env,
  })
  console.log(`(${name}: ${((Date.now() - started) / 1000).toFixed(1)} s, exit ${result.status})`)
  if (result.status !== 0) failed++
}
process.exit(failed ? 1 : 0)

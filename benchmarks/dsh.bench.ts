/**
 * DSH benchmark (issue 18): the same DSH turn with the Taskward bundle loaded vs without it, in one run,
 * against the same scripted loopback endpoint, and the size of the `pack:dsh` tarball.
 *
 * Two real `dsh web` processes (DSH 0.1.0-rc.8 from the cache; each its own DSH_HOME, the one without
 * the bundle carrying the `hmr` workaround itself), one session each. A turn is `session.prompt` → the
 * model asks for DSH's `read` of a file → the tool result → a text answer; it is timed from the prompt
 * until both model steps were served and DSH lists the session as idle.
 *
 * On a loaded 2-core machine single turns vary by ±30 %, and load drifts over a run, so the figure is
 * PAIRED: each round times one turn on each DSH back to back (which goes first alternates), and the
 * ratio of that pair is one sample; the goal is held to the median of ROUNDS pair ratios (after WARMUP
 * untimed pairs), printed with its trimmed mean and spread (p10–p90 of the pair ratios, and each side's
 * median and interquartile range). Goal: with the bundle ≤ 1.05× without. Skips (exit 0) without the
 * cached DSH install.
 */
import { statSync } from 'node:fs'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { mockText, OpenAIMock, type MockReply, type MockRequest } from '@taskward/testkit'
import { DshHome, dshInstall, packedBundle, type DshWeb } from '../tests/dsh/dsh-host'
import { Goals } from './goals'

const ROUNDS = Number(process.env.DSH_BENCH_ROUNDS ?? 41)
const WARMUP = Number(process.env.DSH_BENCH_WARMUP ?? 4)

const found = await dshInstall()
if (!found.paths) {
  console.log(`skipped: ${found.skip}`)
  process.exit(0)
}

/** Every turn: read `notes.txt`, then answer. Decided from the request, so both DSHs get the same. */
function turnPlayer(request: MockRequest): MockReply {
  const messages: any[] = request.body.messages ?? []
  const last = messages.at(-1)
  if (last?.role === 'tool') return mockText('The notes say hello.')
  const cwd = /session workspace: "([^"]+)"/.exec(messages.map((m) => typeof m.content === 'string' ? m.content : '').join('\n'))?.[1] ?? '.'
  return { toolCalls: [{ name: 'read', args: { file_path: `${cwd}/notes.txt` } }] }
}

const model = await OpenAIMock.start()
model.fallback = turnPlayer
const tarball = await packedBundle()
const workspace = await mkdtemp(join(tmpdir(), 'taskward-dsh-bench-'))
await writeFile(join(workspace, 'notes.txt'), 'hello\n')

async function dsh(withBundle: boolean): Promise<{ home: DshHome, web: DshWeb, sessionId: string }> {
  const home = await DshHome.create(found.paths!, { baseURL: `http://127.0.0.1:${model.port}` })
  if (withBundle) {
    await home.addBundle(tarball)
  } else {
    // rc.8 does not start without the hmr row enabled in some layer (docs/dsh.md).
    await mkdir(home.home, { recursive: true })
    await writeFile(join(home.home, 'cordis.patch.yml'), '- id: hmr\n  disabled: false\n')
  }
  const web = await home.start({ taskward: withBundle })
  const { sessionId } = await web.api('session.create', { cwd: workspace })
  return { home, web, sessionId }
}

/** Whether the session's turn is over: DSH's session list says it is not running. */
async function idle(web: DshWeb, sessionId: string) {
  const { items } = await web.api('session.list', {})
  return items.some((item: any) => item.sessionId === sessionId && !item.running)
}

/** One turn, timed from the prompt until both model steps were served and DSH reports the session idle. */
async function turn(target: { web: DshWeb, sessionId: string }) {
  const served = model.requests.length
  const started = performance.now()
  await target.web.api('session.prompt', { sessionId: target.sessionId, mode: 'queue', content: [{ type: 'text', text: 'What do the notes say?' }] })
  while (model.requests.length < served + 2 || !await idle(target.web, target.sessionId)) {
    if (performance.now() - started > 30_000) throw new Error('a benchmark turn took over 30 s')
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  return performance.now() - started
}

/** The q-quantile of `values` (nearest rank). */
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))]
}
const median = (values: number[]) => quantile(values, 0.5)
/** The mean of `values` without the lowest and highest `cut` fraction each. */
const trimmedMean = (values: number[], cut = 0.2) => {
  const sorted = [...values].sort((a, b) => a - b)
  const drop = Math.floor(sorted.length * cut)
  const kept = sorted.slice(drop, sorted.length - drop)
  return kept.reduce((sum, value) => sum + value, 0) / kept.length
}
const ms = (values: number[]) => `${median(values).toFixed(1)} ms (IQR ${quantile(values, 0.25).toFixed(1)}–${quantile(values, 0.75).toFixed(1)})`

const plain = await dsh(false)
const bundled = await dsh(true)
try {
  for (let i = 0; i < WARMUP; i++) { await turn(plain); await turn(bundled) }
  const times = { plain: [] as number[], bundled: [] as number[] }
  const ratios: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which goes first, so neither always runs on a warmer machine.
    let a: number, b: number
    if (i % 2) { b = await turn(bundled); a = await turn(plain) }
    else { a = await turn(plain); b = await turn(bundled) }
    times.plain.push(a)
    times.bundled.push(b)
    ratios.push(b / a)
  }
  const ratio = median(ratios)
  console.log(`DSH turn (prompt → read → answer), ${ROUNDS} interleaved pairs: without Taskward ${ms(times.plain)}, with ${ms(times.bundled)}`)
  console.log(`  pair ratio with/without: median ${ratio.toFixed(3)}x, trimmed mean (20 %) ${trimmedMean(ratios).toFixed(3)}x, `
    + `p10–p90 ${quantile(ratios, 0.1).toFixed(3)}–${quantile(ratios, 0.9).toFixed(3)}x; ratio of medians ${(median(times.bundled) / median(times.plain)).toFixed(3)}x`)
  const size = statSync(tarball).size
  console.log(`pack:dsh tarball: ${(size / 1024).toFixed(1)} KiB`)
  const goals = new Goals()
  goals.check('DSH turn with the bundle vs without (median pair ratio)', ratio <= 1.05, `${ratio.toFixed(3)}x, goal <= 1.05x`)
  goals.check('pack:dsh tarball size', size <= 1024 * 1024, `${(size / 1024).toFixed(1)} KiB, goal <= 1024 KiB`)
  goals.report()
} finally {
  await plain.web.stop()
  await bundled.web.stop()
  await plain.home.dispose()
  await bundled.home.dispose()
  await model.close()
  await rm(workspace, { recursive: true, force: true })
}

/**
 * Workspace stamps and checks on a real repository: a copy of this checkout after `npm ci` (its
 * node_modules included, .git and data/ left out; WORKSPACE_REPO_SOURCE names another tree), aged past
 * the stat cache's racy window, in a temp directory. Each figure beside a floor measured in the same run,
 * rounds alternating, medians reported (WORKSPACE_REPO_ROUNDS, default 5):
 *   - warm stamp (nothing changed, stat cache primed) vs a bare stat walk (readdir + lstat of every
 *     entry, synchronous, in this process). Goal <= 2x.
 *   - cold stamp (no stat cache kept) vs one `find -type f | xargs sha256sum` pass. Goal <= 1.0x.
 *   - one verification (recovery's runChecks, two checks of `true`, bubblewrap) vs two bare bubblewrap
 *     runs of `true` plus one `cp -a` of the non-dependency files. Goal <= 1.5x.
 */
import { spawnSync } from 'node:child_process'
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DependencyMatcher, DEFAULT_DEPENDENCY_DIRECTORIES, resolveStampLimits } from '@taskward/protocol'
import { stampWorkspace } from '@taskward/plugin-workspace'
import { StatCacheStore } from '../plugins/workspace/src/stat-cache'
import { Goals } from './goals'

const ROUNDS = Number(process.env.WORKSPACE_REPO_ROUNDS ?? 5)
const SOURCE = resolve(process.env.WORKSPACE_REPO_SOURCE ?? fileURLToPath(new URL('..', import.meta.url)))
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(0)} ms`

async function time<T>(run: () => Promise<T> | T): Promise<[number, T]> {
  const started = performance.now()
  const value = await run()
  return [performance.now() - started, value]
}

/** The floor of a warm stamp: every entry listed and lstat'ed once, nothing else. */
function statWalk(dir: string): number {
  let entries = 0
  for (const name of readdirSync(dir)) {
    if (dir === root && name === '.git') continue
    const path = `${dir}/${name}`
    const stats = lstatSync(path, { bigint: true })
    entries++
    if (stats.isDirectory()) entries += statWalk(path)
  }
  return entries
}

function sh(script: string, ...args: string[]) {
  const result = spawnSync('sh', ['-c', script, 'sh', ...args], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (result.status !== 0) throw new Error(`${script} failed with status ${result.status}`)
}

const base = mkdtempSync(join(tmpdir(), 'taskward-repo-bench-'))
const root = join(base, 'repo')
try {
  sh('mkdir "$2" && cd "$1" && tar --exclude=./.git --exclude=./data --exclude=./.bench -cf - . | (cd "$2" && tar xf -)', SOURCE, root)
  const entries = statWalk(root)
  console.log(`tree: a copy of ${SOURCE} (.git and data/ left out): ${entries} entries`)
  // A real repository's files are older than the racy window (2 s); a just-copied tree is not.
  await new Promise((done) => setTimeout(done, 2_500))

  const dependencies = new DependencyMatcher(DEFAULT_DEPENDENCY_DIRECTORIES)
  const limits = resolveStampLimits()
  const warmCache = new StatCacheStore()
  const reference = await stampWorkspace(root, limits, {}, { dependencies, cache: warmCache })
  console.log(`stamp: ${reference.files} files (${reference.dependencies!.files} in dependency directories), ${reference.links} links, ${(reference.bytes / 2 ** 20).toFixed(0)} MiB`)
  sh('find "$1" -type f -print0 | xargs -0 sha256sum > /dev/null', root)
  statWalk(root)

  const warm: number[] = []
  const walk: number[] = []
  const cold: number[] = []
  const sha: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const [w, again] = await time(() => stampWorkspace(root, limits, {}, { dependencies, cache: warmCache }))
    if (again.digest !== reference.digest) throw new Error('the digest changed between rounds')
    warm.push(w)
    walk.push((await time(() => statWalk(root)))[0])
    const [c, fresh] = await time(() => stampWorkspace(root, limits, {}, { dependencies, cache: new StatCacheStore() }))
    if (fresh.digest !== reference.digest) throw new Error('a cold stamp differs from the warm one')
    cold.push(c)
    sha.push((await time(() => sh('find "$1" -type f -print0 | xargs -0 sha256sum > /dev/null', root)))[0])
  }
  const goals = new Goals()
  const rows: string[][] = []
  const rounds = (values: number[]) => values.map((value) => value.toFixed(0)).join(' / ')
  const compare = (label: string, ours: number[], floor: number[], floorLabel: string, goal: number) => {
    const ratio = median(ours) / median(floor)
    rows.push([label, ms(median(ours)), floorLabel, ms(median(floor)), `${ratio.toFixed(2)}x`])
    // Every round, so that the spread shows beside the medians.
    console.log(`${label}: rounds ${rounds(ours)} ms; ${floorLabel}: rounds ${rounds(floor)} ms; ratio per round ${ours.map((value, i) => (value / floor[i]).toFixed(2)).join(' / ')}`)
    goals.check(`${label} vs ${floorLabel}`, ratio <= goal, `${ratio.toFixed(2)}x, goal <= ${goal}x`)
  }
  compare('warm stamp', warm, walk, 'bare stat walk', 2)
  compare('cold stamp', cold, sha, 'find | xargs sha256sum', 1.0)

  const verification = await verificationRounds(root, ROUNDS)
  if (verification) compare('verification (2 checks of true, bwrap)', verification.ours, verification.floor, '2 bare bwrap + 1 tar copy of own files', 1.5)

  const width = Math.max(...rows.map((row) => row[0].length))
  for (const [label, ours, floorLabel, floor, ratio] of rows) console.log(`${label.padEnd(width)}  ${ours.padStart(8)}   ${floorLabel}: ${floor}   ${ratio}`)
  goals.report()
} finally {
  rmSync(base, { recursive: true, force: true })
}

/** runChecks through a real host with the recovery plugin in bwrap, against its floor; undefined without bwrap. */
async function verificationRounds(workspace: string, rounds: number) {
  const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim()
  if (!bwrap) {
    console.log('verification: skipped (bubblewrap is not installed)')
    return undefined
  }
  const { bootRecovery, readyTask } = await import('../plugins/recovery/tests/fixtures')
  const host = await bootRecovery({ sandbox: 'bwrap' })
  try {
    const checks = [{ id: 'one', argv: ['true'], timeoutMs: 30_000 }, { id: 'two', argv: ['true'], timeoutMs: 30_000 }]
    const { session, task } = await readyTask(host, workspace, checks)
    const taskId = task.id
    const own = join(base, 'own-copy')
    const floorOnce = () => {
      sh(`"$1" --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp true`, bwrap)
      sh(`"$1" --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp true`, bwrap)
      sh('cd "$1" && tar --exclude=./node_modules --exclude="./*/*/node_modules" -cf - . | (mkdir "$2" && cd "$2" && tar xf -); rm -rf "$2"', workspace, own)
    }
    await host.ctx.recovery.runChecks(session, taskId, { claim: 'progress' })
    floorOnce()
    const ours: number[] = []
    const floor: number[] = []
    for (let round = 0; round < rounds; round++) {
      ours.push((await time(() => host.ctx.recovery.runChecks(session, taskId, { claim: 'progress' })))[0])
      floor.push((await time(floorOnce))[0])
    }
    return { ours, floor }
  } finally {
    await host.dispose()
  }
}


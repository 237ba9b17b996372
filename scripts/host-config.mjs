// The host config `npm start` boots: a base file (cordis.yml, or --config FILE) with patch layers
// applied in order — cordis.<profile>.yml when TASKWARD_PROFILE=<profile> is set, cordis.local.yml,
// cordis.patch.yml (both git-ignored, both beside the base file), then each `--patch FILE` — so a user
// adds or changes plugins without editing the shipped file. A layer is DSH's patch list (the composer:
// scripts/host-config-compose.mjs). Rules and precedence: docs/operations.md, "Host config overlays".
// Rows are moved, never evaluated: `!!js` expressions reach cordis untouched.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { compose } from './host-config-compose.mjs'
import { renderComposed } from './host-config-dump.mjs'
import { HostConfigError, parse } from './host-config-yaml.mjs'

export { applyLayer, checkBase, compose, layerEntries } from './host-config-compose.mjs'
export { renderComposed } from './host-config-dump.mjs'
export { dump, HostConfigError, parse, schema } from './host-config-yaml.mjs'

export const BASE_FILE = 'cordis.yml'
export const LOCAL_FILE = 'cordis.local.yml'
/** DSH's user patch layer, read from beside the base file as DSH reads it from a profile directory. */
export const PATCH_FILE = 'cordis.patch.yml'
/**
 * What `npm start` hands to the cordis CLI when a layer applies (git-ignored, written at each start):
 * named after its content, so two hosts started at once with different layers never boot each other's.
 */
export const effectiveFileName = (text) => `.cordis.effective.${createHash('sha256').update(text).digest('hex').slice(0, 12)}.yml`

const PROFILE_PATTERN = /^[a-z0-9][a-z0-9_-]*$/
const RESERVED_PROFILES = ['local', 'patch', 'effective']

/**
 * The layer files that apply, in the order they are applied (later wins): the profile's, the local
 * one, cordis.patch.yml, then every `patches` path (relative to `cwd`), each of which must exist.
 */
export function layerFiles(root, env = process.env, patches = [], cwd = process.cwd()) {
  const files = []
  const profile = env.TASKWARD_PROFILE?.trim()
  if (profile) {
    if (!PROFILE_PATTERN.test(profile) || RESERVED_PROFILES.includes(profile)) {
      throw new HostConfigError(`TASKWARD_PROFILE="${profile}" is not a profile name: use lower-case letters, digits, "-" and "_" `
        + '(not "local" or "patch", whose files are always applied, nor "effective").', { file: 'TASKWARD_PROFILE' })
    }
    const path = join(root, `cordis.${profile}.yml`)
    if (!existsSync(path)) {
      throw new HostConfigError(`TASKWARD_PROFILE=${profile} but cordis.${profile}.yml does not exist next to ${BASE_FILE}; create it or unset TASKWARD_PROFILE.`,
        { file: `cordis.${profile}.yml` })
    }
    files.push({ path: regularFile(path, `TASKWARD_PROFILE=${profile}`), source: `cordis.${profile}.yml` })
  }
  for (const name of [LOCAL_FILE, PATCH_FILE]) {
    const path = join(root, name)
    if (existsSync(path)) files.push({ path: regularFile(path, name), source: name })
  }
  for (const patch of patches) {
    const path = resolve(cwd, patch)
    if (!existsSync(path)) throw new HostConfigError(`--patch ${patch}: no such file (${path}); give the path of a patch list.`, { file: path })
    files.push({ path: regularFile(path, `--patch ${patch}`), source: path })
  }
  return files
}

/**
 * `path` when it is (or links to) a regular file. A directory, FIFO or device is refused before it is
 * read: reading a FIFO blocks npm start for good, and /dev/zero never ends.
 */
function regularFile(path, what) {
  const stats = statSync(path)
  if (!stats.isFile()) {
    const kind = stats.isDirectory() ? 'a directory' : stats.isFIFO() ? 'a FIFO' : 'not a regular file'
    throw new HostConfigError(`${what}: ${path} is ${kind}; give the path of a patch list file.`, { file: path })
  }
  return path
}

function read(path, source) {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new HostConfigError(`${source}: cannot be read (${error.code ?? error.message}); check the path and its permissions.`, { file: source })
  }
}

/**
 * The composed rows of `root`/`baseFile` with every layer applied, each row's history (id → {origin,
 * patchedBy}) and the files that took part, base first.
 */
export function resolveHostConfig(root, env = process.env, { baseFile = BASE_FILE, patches = [], cwd } = {}) {
  const base = parse(read(join(root, baseFile), baseFile), baseFile)
  const files = layerFiles(root, env, patches, cwd)
  const layers = files.map(({ path, source }) => ({ file: source, layer: parse(read(path, source), source) }))
  const { rows, provenance } = compose(base, baseFile, layers)
  return { rows, provenance, sources: [baseFile, ...files.map((f) => f.source)] }
}

/** What `npm start -- --dump-config` prints: the composed rows, each run headed by its history. */
export function dumpHostConfig(root, env = process.env, options = {}) {
  const { rows, provenance, sources } = resolveHostConfig(root, env, options)
  return renderComposed(rows, provenance, [`Host config composed by npm start from ${sources.join(' + ')} (not started; !!js shown unevaluated).`])
}

/**
 * The config file to boot: the base file itself when no layer applies, else the composed rows written to
 * .cordis.effective.<content hash>.yml next to it (so that plugin names resolve from the same node_modules).
 */
export function effectiveConfigPath(root, env = process.env, options = {}) {
  const { rows, provenance, sources } = resolveHostConfig(root, env, options)
  if (sources.length === 1) return join(root, sources[0])
  const text = renderComposed(rows, provenance, [`Generated by npm start from ${sources.join(' + ')}; edit those files, not this one.`])
  const path = join(root, effectiveFileName(text))
  // Written whole, then moved into place: a host starting at the same moment never reads half a file.
  // Owner-only: the composed rows may carry a layer's secrets (an apiKey in cordis.local.yml).
  writeFileSync(`${path}.${process.pid}`, text, { mode: 0o600 })
  renameSync(`${path}.${process.pid}`, path)
  return path
}

/** Run `fn` for `npm start`: a host config mistake is printed as one `CODE: message` line and exits with status 2. */
export function orExit(fn) {
  try {
    return fn()
  } catch (error) {
    if (!(error instanceof HostConfigError)) throw error
    console.error(`${error.code}: ${error.message}`)
    process.exit(2)
  }
}

/** `effectiveConfigPath` for `npm start`. */
export function hostConfigFile(root, env = process.env, options = {}) {
  return orExit(() => effectiveConfigPath(root, env, options))
}

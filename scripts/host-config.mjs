// The host config `npm start` boots: cordis.yml (the shipped base) with overlays applied in order —
// cordis.<profile>.yml when TASKWARD_PROFILE=<profile> is set, then cordis.local.yml (git-ignored) — so
// a user adds or changes plugins without editing the shipped file. Rules and precedence: docs/operations.md,
// "Host config overlays". Rows are moved, never evaluated: `!!js` expressions reach cordis untouched.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import yaml from 'js-yaml'

/** `!!js "expr"` kept as an opaque value and written back as the same tag (cordis's loader evaluates it). */
const JsExpr = new yaml.Type('tag:yaml.org,2002:js', {
  kind: 'scalar',
  resolve: (data) => typeof data === 'string',
  construct: (data) => ({ __jsExpr: data }),
  predicate: (value) => value instanceof Object && '__jsExpr' in value,
  represent: (value) => value.__jsExpr,
})

/** The YAML schema cordis reads config files with: JSON types plus `!!js`. */
export const schema = yaml.JSON_SCHEMA.extend(JsExpr)

export const BASE_FILE = 'cordis.yml'
export const LOCAL_FILE = 'cordis.local.yml'
/** What `npm start` hands to the cordis CLI when an overlay applies (git-ignored, rewritten at each start). */
export const EFFECTIVE_FILE = '.cordis.effective.yml'

const PROFILE_PATTERN = /^[a-z0-9][a-z0-9_-]*$/
const ROW_KEYS = new Set(['id', 'name', 'config', 'disabled'])
const PATCH_KEYS = new Set(['id', 'config', 'disabled'])

export class HostConfigError extends Error {
  name = 'HostConfigError'
}

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value)

export function parse(text, source) {
  try {
    return yaml.load(text, { schema, filename: source })
  } catch (error) {
    throw new HostConfigError(`${source} is not valid YAML: ${error.message}`)
  }
}

function checkRow(row, source, where) {
  if (!isObject(row)) throw new HostConfigError(`${source}: ${where} must be a row {id, name, config?, disabled?}.`)
  for (const key of Object.keys(row)) {
    if (!ROW_KEYS.has(key)) throw new HostConfigError(`${source}: ${where} has an unknown key "${key}" (a row has id, name, config, disabled).`)
  }
  if (typeof row.id !== 'string' || !row.id) throw new HostConfigError(`${source}: ${where} needs an "id" (a non-empty string).`)
  if (typeof row.name !== 'string' || !row.name) throw new HostConfigError(`${source}: row "${row.id}" needs a "name" (the plugin's package name).`)
  if ('disabled' in row && typeof row.disabled !== 'boolean') throw new HostConfigError(`${source}: row "${row.id}": "disabled" must be true or false.`)
}

/** Check the base file's rows: a list of rows with unique ids. */
export function checkBase(rows, source = BASE_FILE) {
  if (!Array.isArray(rows)) throw new HostConfigError(`${source} must be a list of rows {id, name, config?}.`)
  const ids = new Set()
  rows.forEach((row, index) => {
    checkRow(row, source, `row ${index + 1}`)
    if (ids.has(row.id)) throw new HostConfigError(`${source}: the id "${row.id}" is used by two rows; ids must be unique.`)
    ids.add(row.id)
  })
  return rows
}

/**
 * Apply one overlay `{patch?: [{id, config?, disabled?}], insert?: [rows]}` to `rows` (not mutated).
 * Patches first, on the rows so far (base and earlier overlays): `config` replaces the row's whole config,
 * `disabled` sets or clears the flag. Then `insert` appends its rows. An empty file changes nothing.
 */
export function applyOverlay(rows, overlay, source) {
  if (overlay === undefined || overlay === null) return rows
  if (!isObject(overlay)) {
    throw new HostConfigError(`${source} must be a mapping with "patch" and/or "insert" (a list of rows belongs under "insert:").`)
  }
  for (const key of Object.keys(overlay)) {
    if (key !== 'patch' && key !== 'insert') throw new HostConfigError(`${source}: unknown key "${key}"; an overlay has "patch" and "insert".`)
  }
  const patches = overlay.patch ?? []
  const inserts = overlay.insert ?? []
  if (!Array.isArray(patches)) throw new HostConfigError(`${source}: "patch" must be a list of {id, config?, disabled?}.`)
  if (!Array.isArray(inserts)) throw new HostConfigError(`${source}: "insert" must be a list of rows {id, name, config?, disabled?}.`)

  const next = rows.map((row) => ({ ...row }))
  const patched = new Set()
  patches.forEach((patch, index) => {
    if (!isObject(patch) || typeof patch.id !== 'string') throw new HostConfigError(`${source}: patch ${index + 1} needs an "id" naming the row to change.`)
    for (const key of Object.keys(patch)) {
      if (!PATCH_KEYS.has(key)) {
        throw new HostConfigError(`${source}: patch "${patch.id}" has the key "${key}"; a patch may set only "config" and "disabled" `
          + '(to load another plugin, insert a row and disable this one).')
      }
    }
    if (!('config' in patch) && !('disabled' in patch)) throw new HostConfigError(`${source}: patch "${patch.id}" changes nothing; give "config" or "disabled".`)
    if ('disabled' in patch && typeof patch.disabled !== 'boolean') throw new HostConfigError(`${source}: patch "${patch.id}": "disabled" must be true or false.`)
    if (patched.has(patch.id)) throw new HostConfigError(`${source}: row "${patch.id}" is patched twice; merge the two patches.`)
    patched.add(patch.id)
    const row = next.find((r) => r.id === patch.id)
    if (!row) {
      throw new HostConfigError(`${source}: patch "${patch.id}" names no row. Known ids: ${next.map((r) => r.id).join(', ')}. `
        + 'To add a plugin, put its row under "insert:".')
    }
    if ('config' in patch) {
      if (patch.config === null || patch.config === undefined) delete row.config
      else row.config = patch.config
    }
    if ('disabled' in patch) {
      if (patch.disabled) row.disabled = true
      else delete row.disabled
    }
  })
  inserts.forEach((row, index) => {
    checkRow(row, source, `insert ${index + 1}`)
    if (next.some((r) => r.id === row.id)) {
      throw new HostConfigError(`${source}: insert "${row.id}" reuses an existing id; patch that row instead, or choose another id.`)
    }
    next.push({ ...row })
  })
  return next
}

/** The overlay files that apply, in the order they are applied (later wins): the profile's, then the local one. */
export function overlayFiles(root, env = process.env) {
  const files = []
  const profile = env.TASKWARD_PROFILE?.trim()
  if (profile) {
    if (!PROFILE_PATTERN.test(profile) || profile === 'local' || profile === 'effective') {
      throw new HostConfigError(`TASKWARD_PROFILE="${profile}" is not a profile name: use lower-case letters, digits, "-" and "_" `
        + '(not "local", which is always applied, nor "effective").')
    }
    const path = join(root, `cordis.${profile}.yml`)
    if (!existsSync(path)) throw new HostConfigError(`TASKWARD_PROFILE=${profile} but cordis.${profile}.yml does not exist next to cordis.yml.`)
    files.push({ path, source: `cordis.${profile}.yml` })
  }
  const local = join(root, LOCAL_FILE)
  if (existsSync(local)) files.push({ path: local, source: LOCAL_FILE })
  return files
}

/** Base rows with every overlay applied, and the files that contributed. */
export function resolveHostConfig(root, env = process.env) {
  let rows = checkBase(parse(readFileSync(join(root, BASE_FILE), 'utf8'), BASE_FILE))
  const files = overlayFiles(root, env)
  for (const { path, source } of files) rows = applyOverlay(rows, parse(readFileSync(path, 'utf8'), source), source)
  return { rows, sources: [BASE_FILE, ...files.map((f) => f.source)] }
}

export function dump(rows) {
  return yaml.dump(rows, { schema, lineWidth: -1, noRefs: true })
}

/**
 * The config file to boot: cordis.yml itself when no overlay applies, else the merged rows written to
 * .cordis.effective.yml next to it (so that plugin names resolve from the same node_modules).
 */
export function effectiveConfigPath(root, env = process.env) {
  const { rows, sources } = resolveHostConfig(root, env)
  if (sources.length === 1) return join(root, BASE_FILE)
  const path = join(root, EFFECTIVE_FILE)
  writeFileSync(path, `# Generated by npm start from ${sources.join(' + ')}; edit those files, not this one.\n${dump(rows)}`)
  return path
}

/** `effectiveConfigPath` for `npm start`: a config mistake is printed as one clear line and exits with status 2. */
export function hostConfigFile(root, env = process.env) {
  try {
    return effectiveConfigPath(root, env)
  } catch (error) {
    if (!(error instanceof HostConfigError)) throw error
    console.error(`Host config: ${error.message}`)
    process.exit(2)
  }
}

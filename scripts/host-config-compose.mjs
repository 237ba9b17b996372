// Composing the host config: cordis.yml's rows, then patch layers in DSH's format applied in order.
// A layer is a YAML list of entries (DSH's `cordis.patch.yml`):
//   - id: console            patch: set these top-level keys of the row with that id
//     disabled: true           (`config` replaced whole, no deep merge; null removes a key)
//   - insert: [rows]          append rows at the root
//   - id: tools               insert rows into the group row `tools` (group: true, rows under config)
//     insert: [rows]
// The older mapping form `{patch: [...], insert: [...]}` is read as its patches followed by one insert.
// Unlike DSH, which warns and skips what it cannot apply, every mistake is refused: a host that boots
// without the row the user meant to change is worse than one that does not boot.
import { HostConfigError } from './host-config-yaml.mjs'

/** The keys a row may have (cordis's loader entry options that DSH's rows use). */
const ROW_KEYS = ['id', 'name', 'config', 'disabled', 'inject', 'group']
/** What a patch may set; `id` selects the row and `name`, when given, must be the row's plugin. */
const PATCH_KEYS = ['config', 'disabled', 'inject', 'group']
const LIST_FORM = 'a list of entries like "- id: console" + "  disabled: true", or "- insert: [{id, name, config}]"'

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value)

/** Whether `value` is or holds a `!!js` expression (cordis's loader takes any `{__jsExpr}` object for one). */
const holdsJs = (value) => value !== null && typeof value === 'object'
  && ('__jsExpr' in value || Object.values(value).some(holdsJs))

function fail(message, details) {
  throw new HostConfigError(message, details)
}

/** Check one row (and, for a group, its rows): `where` names it in the message, e.g. `entry 2, row 1`. */
function checkRow(row, file, where) {
  if (!isObject(row)) fail(`${file}: ${where} must be a row {id, name, config?, disabled?, inject?, group?}.`, { file })
  for (const key of Object.keys(row)) {
    if (!ROW_KEYS.includes(key)) {
      fail(`${file}: ${where} has the key "${key}"; a row has ${ROW_KEYS.join(', ')}.`, { file, id: row.id })
    }
  }
  if (typeof row.id !== 'string' || !row.id) fail(`${file}: ${where} needs an "id" (a non-empty string).`, { file })
  // The dump writes ids into `#` comment lines: a line break in one would turn the rest into rows.
  if (/[\u0000-\u001f\u007f\u0085\u2028\u2029]/.test(row.id)) {
    fail(`${file}: ${where}: the id ${JSON.stringify(row.id)} holds a line break or another control character; choose a plain id.`, { file, id: row.id })
  }
  // cordis joins a group's ids with ":" to address nested rows, so an id holding one would name another row.
  if (row.id.includes(':')) fail(`${file}: ${where}: the id "${row.id}" contains ":"; choose an id without it.`, { file, id: row.id })
  if (typeof row.name !== 'string' || !row.name) fail(`${file}: ${where} ("${row.id}") needs a "name" (the plugin's package name).`, { file, id: row.id })
  checkValues(row, file, `${where} ("${row.id}")`)
  if (row.group === true && Array.isArray(row.config)) {
    row.config.forEach((child, index) => checkRow(child, file, `${where} ("${row.id}"), group row ${index + 1}`))
  }
}

/** The keys whose values have a fixed type, as a row or a patch sets them. */
function checkValues(values, file, where) {
  const details = { file, id: values.id }
  for (const key of ['disabled', 'group']) {
    if (values[key] !== undefined && values[key] !== null && typeof values[key] !== 'boolean') fail(`${file}: ${where}: "${key}" must be true or false.`, details)
  }
  const inject = values.inject
  if (inject !== undefined && inject !== null && !isObject(inject)
    && !(Array.isArray(inject) && inject.every((name) => typeof name === 'string' && name))) {
    fail(`${file}: ${where}: "inject" must be a list of service names or a mapping.`, details)
  }
  // cordis evaluates `!!js` only inside a row's config; anywhere else it would be read as a mapping.
  if (holdsJs(inject)) fail(`${file}: ${where}: "inject" holds a !!js expression; cordis evaluates !!js only inside "config".`, details)
}

/** Every row of the tree, group rows' rows included (cordis keeps one id space for the whole tree). */
function* allRows(rows) {
  for (const row of rows) {
    yield row
    if (row.group === true && Array.isArray(row.config)) yield* allRows(row.config)
  }
}

function findRow(rows, id) {
  for (const row of allRows(rows)) if (row.id === id) return row
  return undefined
}

/** `where` says what made the duplicate, e.g. `entry 2 inserts "audit": the id "audit" is then used by two rows`. */
function refuseDuplicateIds(rows, file, where, fix) {
  const seen = new Set()
  for (const row of allRows(rows)) {
    const what = where ? `${where}: the id "${row.id}" is then used by two rows` : `the id "${row.id}" is used by two rows`
    if (seen.has(row.id)) fail(`${file}: ${what}; ${fix}.`, { file, id: row.id })
    seen.add(row.id)
  }
}

/** Check the base file: a list of rows with ids unique across the tree. */
export function checkBase(rows, file = 'cordis.yml') {
  if (!Array.isArray(rows)) fail(`${file} must be a list of rows {id, name, config?}.`, { file })
  rows.forEach((row, index) => checkRow(row, file, `row ${index + 1}`))
  refuseDuplicateIds(rows, file, undefined, 'ids must be unique across the tree, group rows included')
  return rows
}

/**
 * A layer file's entries, each with where it stands in the file (`entry 3`, or `patch 2` / `insert` in
 * the mapping form). An empty file has none.
 */
export function layerEntries(layer, file) {
  if (layer === undefined || layer === null) return []
  if (Array.isArray(layer)) return layer.map((entry, index) => ({ entry, where: `entry ${index + 1}` }))
  if (!isObject(layer)) fail(`${file} must be ${LIST_FORM}.`, { file })
  for (const key of Object.keys(layer)) {
    if (key !== 'patch' && key !== 'insert') fail(`${file}: unknown key "${key}"; write the file as ${LIST_FORM}.`, { file })
  }
  const patches = layer.patch ?? []
  const inserts = layer.insert ?? []
  if (!Array.isArray(patches)) fail(`${file}: "patch" must be a list of {id, config?, disabled?}; or write the file as ${LIST_FORM}.`, { file })
  if (!Array.isArray(inserts)) fail(`${file}: "insert" must be a list of rows; or write the file as ${LIST_FORM}.`, { file })
  return [
    ...patches.map((entry, index) => ({ entry, where: `patch ${index + 1}` })),
    ...(inserts.length ? [{ entry: { insert: inserts }, where: 'insert' }] : []),
  ]
}

/** Record that `file` made `row` (and the rows of a group it holds). */
function madeBy(provenance, row, file) {
  for (const made of allRows([row])) provenance.set(made.id, { origin: file, patchedBy: [] })
}

function patchedBy(provenance, id, file) {
  const record = provenance.get(id)
  if (!record.patchedBy.includes(file)) record.patchedBy.push(file)
}

function applyInsert(rows, entry, file, where, provenance) {
  for (const key of Object.keys(entry)) {
    if (key !== 'insert' && key !== 'id') {
      fail(`${file}: ${where} inserts rows and also sets "${key}"; an insert entry has only "insert" (and "id" of the group to insert into) — patch the row in an entry of its own.`, { file })
    }
  }
  if (!Array.isArray(entry.insert)) fail(`${file}: ${where}: "insert" must be a list of rows {id, name, config?}.`, { file })
  entry.insert.forEach((row, index) => checkRow(row, file, `${where}, row ${index + 1}`))
  let into = rows
  if ('id' in entry) {
    const group = findRow(rows, entry.id)
    if (typeof entry.id !== 'string' || !group) {
      fail(`${file}: ${where} inserts into "${entry.id}", which names no row. Known ids: ${[...allRows(rows)].map((r) => r.id).join(', ')}. `
        + 'To add rows at the top level, leave out "id".', { file, id: entry.id })
    }
    if (group.group !== true) {
      fail(`${file}: ${where} inserts into "${entry.id}", which is not a group (a group row has "group: true" and its rows under "config"); `
        + 'leave out "id" to add the rows at the top level.', { file, id: entry.id })
    }
    group.config ??= []
    into = group.config
    patchedBy(provenance, group.id, file)
  }
  for (const row of entry.insert) {
    const copy = structuredClone(row)
    into.push(copy)
    refuseDuplicateIds(rows, file, `${where} inserts "${row.id}"`, 'patch the existing row instead, or choose another id')
    madeBy(provenance, copy, file)
  }
}

function applyPatch(rows, entry, file, where, provenance) {
  if (typeof entry.id !== 'string' || !entry.id) {
    fail(`${file}: ${where} needs an "id" (a string naming the row to patch), or "insert: [rows]" to add rows.`, { file })
  }
  const id = entry.id
  for (const key of Object.keys(entry)) {
    if (key !== 'id' && key !== 'name' && !PATCH_KEYS.includes(key)) {
      fail(`${file}: ${where} ("${id}") has the key "${key}"; a patch sets ${PATCH_KEYS.join(', ')} `
        + '("id" selects the row and cannot be changed; to load another plugin, disable this row and insert one).', { file, id })
    }
  }
  const row = findRow(rows, id)
  if (!row) {
    fail(`${file}: ${where} patches "${id}", which names no row. Known ids: ${[...allRows(rows)].map((r) => r.id).join(', ')}. `
      + 'To add a plugin, use "- insert: [{id, name, config}]".', { file, id })
  }
  if ('name' in entry && entry.name !== row.name) {
    fail(`${file}: ${where} ("${id}") gives the name "${entry.name}" but the row loads "${row.name}"; a patch cannot swap the plugin — `
      + 'disable this row and insert a row for the other one.', { file, id })
  }
  const keys = Object.keys(entry).filter((key) => PATCH_KEYS.includes(key))
  if (!keys.length) fail(`${file}: ${where} ("${id}") changes nothing; give ${PATCH_KEYS.join(', ')}, or "insert".`, { file, id })
  checkValues(entry, file, `${where} ("${id}")`)
  const before = JSON.stringify(row)
  for (const key of keys) {
    if (entry[key] === null || (key === 'disabled' && entry[key] === false)) delete row[key]
    else row[key] = structuredClone(entry[key])
  }
  if (row.group === true && !(row.config === undefined || Array.isArray(row.config))) {
    fail(`${file}: ${where} ("${id}") makes a group whose "config" is not a list of rows.`, { file, id })
  }
  checkRow(row, file, `${where}, the patched row`)
  if (row.group === true && Array.isArray(row.config)) {
    // The group's rows were replaced, or a row's config became rows by `group: true`: this layer made them rows.
    for (const child of row.config) if (keys.includes('config') || !provenance.has(child.id)) madeBy(provenance, child, file)
  }
  refuseDuplicateIds(rows, file, `${where} ("${id}")`, 'give the group\'s rows ids of their own')
  if (JSON.stringify(row) !== before) patchedBy(provenance, id, file)
}

/**
 * Apply one layer to `rows` (not mutated). Entries apply in order, so an entry may patch a row an
 * earlier entry (or layer) inserted. `provenance` (id → {origin, patchedBy}) is updated in place.
 */
export function applyLayer(rows, layer, file, provenance = new Map()) {
  const next = structuredClone(rows)
  for (const row of allRows(next)) if (!provenance.has(row.id)) provenance.set(row.id, { origin: '?', patchedBy: [] })
  for (const { entry, where } of layerEntries(layer, file)) {
    if (!isObject(entry)) fail(`${file}: ${where} must be a mapping; the file is ${LIST_FORM}.`, { file, entry: where })
    if ('insert' in entry) applyInsert(next, entry, file, where, provenance)
    else applyPatch(next, entry, file, where, provenance)
  }
  return next
}

/**
 * The composed tree: `base` rows from `baseFile`, then each {file, layer} in order (later wins).
 * Returns the rows and, per row id, the file that made it and the files that changed it.
 */
export function compose(base, baseFile, layers) {
  let rows = checkBase(base, baseFile)
  const provenance = new Map()
  for (const row of allRows(rows)) provenance.set(row.id, { origin: baseFile, patchedBy: [] })
  for (const { file, layer } of layers) rows = applyLayer(rows, layer, file, provenance)
  // Rows a group's config replacement dropped are gone from the tree: forget them.
  const live = new Set([...allRows(rows)].map((row) => row.id))
  for (const id of provenance.keys()) if (!live.has(id)) provenance.delete(id)
  return { rows, provenance }
}

export { allRows }

// How host config files are read and written: the YAML dialect cordis's loader uses (JSON values plus
// `!!js`), and the one error every host config refusal is. Plain JavaScript on purpose: `npm start` runs
// this before anything is built, so it cannot import @taskward/protocol.
import yaml from 'js-yaml'

/** `!!js "expr"` kept as an opaque value and written back as the same tag (cordis's loader evaluates it). */
const JsExpr = new yaml.Type('tag:yaml.org,2002:js', {
  kind: 'scalar',
  resolve: (data) => typeof data === 'string',
  construct: (data) => ({ __jsExpr: data }),
  predicate: (value) => value instanceof Object && '__jsExpr' in value,
  represent: (value) => value.__jsExpr,
})

/** The YAML schema cordis reads config files with: JSON types plus `!!js`. Any other tag is refused. */
export const schema = yaml.JSON_SCHEMA.extend(JsExpr)

/** The brand @taskward/protocol's `TaskwardError.is` recognises on an error made by another module. */
const TASKWARD_ERROR = Symbol.for('taskward.error')

/**
 * A refused host config: code CONFIG_INVALID (a `TaskwardError` by `TaskwardError.is`), a one-line
 * message naming the file, the entry and what to do, and `details` {file, entry?, id?} for callers.
 */
export class HostConfigError extends Error {
  name = 'HostConfigError'
  code = 'CONFIG_INVALID'

  constructor(message, details = {}) {
    // One line whatever the file held: an id or a path with a line break is shown as `\n`.
    super(String(message).replace(/\r/g, '\\r').replace(/\n/g, '\\n'))
    this.details = details
    Object.defineProperty(this, TASKWARD_ERROR, { value: true })
  }
}

/**
 * Parse one host config file; a syntax error, a tag other than `!!js` or an anchor is one line naming
 * the place. Anchors (`&name`) are refused, of scalars too: printing the composed rows expands every
 * alias (`*name`), so nested aliases of lists would print an exponentially large file, and one long
 * string repeated by a few thousand aliases a quadratically large one.
 */
export function parse(text, source) {
  let value
  let anchorLine
  const listener = (event, state) => {
    if (event === 'close' && state.anchor !== null && anchorLine === undefined) anchorLine = state.line + 1
  }
  try {
    value = yaml.load(text, { schema, filename: source, listener })
  } catch (error) {
    const at = error.mark ? `:${error.mark.line + 1}:${error.mark.column + 1}` : ''
    const hint = /unknown tag/.test(error.reason ?? '') ? ' (host config files allow JSON values and !!js "expression" only)' : ''
    throw new HostConfigError(`${source}${at}: not valid YAML: ${error.reason ?? error.message}${hint}.`, { file: source })
  }
  if (anchorLine !== undefined) {
    throw new HostConfigError(`${source}:${anchorLine}: a YAML anchor (&name) lets aliases (*name) repeat a value; write the value out in full `
      + '(anchors and aliases are not supported in host config files).', { file: source })
  }
  return value
}

/** Rows as YAML in the same dialect (`!!js` written back as `!!js`). */
export function dump(rows) {
  return yaml.dump(rows, { schema, lineWidth: -1, noRefs: true })
}

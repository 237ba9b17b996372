// The composed host config as one loadable YAML document annotated with where each row came from, as
// DSH's `--dump-config` prints it: each run of top-level rows with the same history is preceded by
// `# == <file that made them>[, patched by <files that changed them>]`. A group row also gets one
// `#    <id>: <history>` line per row inside it (YAML comments cannot sit inside a dumped mapping).
import { allRows } from './host-config-compose.mjs'
import { dump } from './host-config-yaml.mjs'

/** `text` for a `#` comment line: a line break (in a file path, say) written as `\\n`, so it cannot end the comment. */
const commentText = (text) => String(text).replace(/\r/g, '\\r').replace(/\n/g, '\\n')

function history(provenance, id) {
  const record = provenance.get(id) ?? { origin: '?', patchedBy: [] }
  return record.patchedBy.length ? `${record.origin}, patched by ${record.patchedBy.join(', ')}` : record.origin
}

/** `rows` and their `provenance` (from `compose`) as YAML with `# ==` history comments; `header` lines first. */
export function renderComposed(rows, provenance, header = []) {
  const lines = header.map((line) => `# ${commentText(line)}`)
  let label
  let run = []
  const flush = () => {
    if (run.length) lines.push(dump(run).trimEnd())
    run = []
  }
  for (const row of rows) {
    const children = row.group === true && Array.isArray(row.config) ? [...allRows(row.config)] : []
    const next = history(provenance, row.id)
    if (next !== label || children.length) {
      flush()
      lines.push(`# == ${commentText(next)}`)
      for (const child of children) lines.push(`#    ${commentText(`${child.id}: ${history(provenance, child.id)}`)}`)
      // A group row with rows inside is a run of its own, so the lines above describe it alone.
      label = children.length ? undefined : next
    }
    run.push(row)
  }
  flush()
  return `${lines.join('\n')}\n`
}

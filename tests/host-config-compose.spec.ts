import { expect } from 'chai'
import { TaskwardError } from '@taskward/protocol'
import {
  applyLayer, checkBase, compose, HostConfigError, parse, renderComposed, type HostRow,
} from '../scripts/host-config.mjs'

/** The composer of npm start's host config (scripts/host-config-compose.mjs), on DSH's patch-list format. */
const BASE: HostRow[] = [
  { id: 'server', name: '@cordisjs/plugin-server', config: { port: 1 } },
  { id: 'supervisor', name: '@taskward/plugin-supervisor', config: { automaticContinuation: true, reviewerModel: 'scripted' } },
  { id: 'console', name: '@taskward/plugin-console' },
  { id: 'extras', name: 'cordis/group', group: true, config: [{ id: 'lint', name: '@me/lint' }] },
]
const AUDIT = { id: 'audit', name: '@taskward/example-plugin-audit', config: { requireNote: false } }

/** Refused as CONFIG_INVALID, on one line, with a message matching `pattern`; returns the error. */
function refuses(fn: () => unknown, pattern: RegExp) {
  let error: unknown
  try {
    fn()
  } catch (caught) {
    error = caught
  }
  expect(error, 'refused').to.be.instanceOf(HostConfigError)
  const refusal = error as HostConfigError
  expect(TaskwardError.is(refusal, 'CONFIG_INVALID'), 'a CONFIG_INVALID TaskwardError').to.equal(true)
  expect(refusal.message).to.match(pattern)
  expect(refusal.message, 'one line').to.not.contain('\n')
  return refusal
}

/** Apply a layer written as YAML text, as npm start reads it. */
const applyText = (rows: HostRow[], text: string, file = 'cordis.patch.yml') => applyLayer(rows, parse(text, file), file)

describe('host config composer (DSH patch lists)', () => {
  describe('the list format', () => {
    it('- id: … patches the row: config replaced whole, the input not mutated', () => {
      const rows = applyText(BASE, '- id: supervisor\n  config:\n    reviewerModel: openai\n')
      expect(rows[1]).to.deep.equal({ id: 'supervisor', name: '@taskward/plugin-supervisor', config: { reviewerModel: 'openai' } })
      expect(BASE[1].config).to.deep.include({ automaticContinuation: true })
    })

    it('sets and clears disabled, inject and group; null removes a key; a matching name is accepted', () => {
      const off = applyText(BASE, "- id: console\n  name: '@taskward/plugin-console'\n  disabled: true\n  inject: [database]\n")
      expect(off[2]).to.deep.equal({ id: 'console', name: '@taskward/plugin-console', disabled: true, inject: ['database'] })
      const on = applyText(off, '- id: console\n  disabled: false\n  inject: null\n')
      expect(on[2]).to.deep.equal({ id: 'console', name: '@taskward/plugin-console' })
      const cleared = applyText(BASE, '- id: server\n  config: null\n')
      expect(cleared[0]).to.deep.equal({ id: 'server', name: '@cordisjs/plugin-server' })
    })

    it('- insert: [rows] appends at the root, and a later entry of the same layer may patch what it inserted', () => {
      const rows = applyText(BASE, [
        '- insert:',
        "    - {id: audit, name: '@taskward/example-plugin-audit', config: {requireNote: false}}",
        '- id: audit',
        '  config: {requireNote: true}',
      ].join('\n'))
      expect(rows.map((r) => r.id)).to.deep.equal(['server', 'supervisor', 'console', 'extras', 'audit'])
      expect(rows[4]).to.deep.equal({ ...AUDIT, config: { requireNote: true } })
    })

    it('- id: <group> + insert puts rows into that group row, where later entries can patch them', () => {
      const rows = applyText(BASE, [
        '- id: extras',
        '  insert:',
        "    - {id: audit, name: '@taskward/example-plugin-audit'}",
        '- id: audit',
        '  disabled: true',
        '- id: lint',
        '  config: {strict: true}',
      ].join('\n'))
      expect(rows[3].config).to.deep.equal([
        { id: 'lint', name: '@me/lint', config: { strict: true } },
        { id: 'audit', name: '@taskward/example-plugin-audit', disabled: true },
      ])
    })

    it('the older mapping form keeps working: its patches, then its inserts, as the equivalent list', () => {
      const legacy = applyText(BASE, "patch:\n  - id: console\n    disabled: true\ninsert:\n  - {id: audit, name: '@taskward/example-plugin-audit', config: {requireNote: false}}\n")
      const list = applyText(BASE, "- id: console\n  disabled: true\n- insert:\n    - {id: audit, name: '@taskward/example-plugin-audit', config: {requireNote: false}}\n")
      expect(legacy).to.deep.equal(list)
      expect(legacy.at(-1)).to.deep.equal(AUDIT)
      // As before, a mapping file's patches come first: it cannot patch its own insert.
      refuses(() => applyLayer(BASE, { patch: [{ id: 'audit', disabled: true }], insert: [AUDIT] }, 'o.yml'), /o\.yml: patch 1 patches "audit", which names no row/)
      refuses(() => applyLayer(BASE, { add: [AUDIT] }, 'o.yml'), /o\.yml: unknown key "add"; write the file as a list of entries like "- id: console"/)
    })

    it('an empty file changes nothing', () => {
      expect(applyLayer(BASE, null, 'empty.yml')).to.deep.equal(BASE)
      expect(applyLayer(BASE, [], 'empty.yml')).to.deep.equal(BASE)
    })
  })

  describe('refusals (hostile or mistaken layers)', () => {
    it('a patch naming an unknown id: file, entry, the known ids (group rows included) and what to do', () => {
      const error = refuses(() => applyText(BASE, '- id: console\n  disabled: true\n- id: supervisr\n  disabled: true\n', 'cordis.local.yml'),
        /^cordis\.local\.yml: entry 2 patches "supervisr", which names no row\. Known ids: server, supervisor, console, extras, lint\. To add a plugin, use "- insert: \[\{id, name, config\}\]"\.$/)
      expect(error.details).to.deep.include({ file: 'cordis.local.yml', id: 'supervisr' })
    })

    it('a patch trying to set or change an id', () => {
      refuses(() => applyText(BASE, '- id: console\n  newId: cli\n'), /entry 1 \("console"\) has the key "newId"; a patch sets config, disabled, inject, group \("id" selects the row and cannot be changed/)
      refuses(() => applyText(BASE, '- id: {console: cli}\n  disabled: true\n'), /entry 1 needs an "id" \(a string naming the row to patch\)/)
      refuses(() => applyText(BASE, '- disabled: true\n'), /entry 1 needs an "id"/)
      refuses(() => applyText(BASE, '- id: console\n  id: cli\n'), /cordis\.patch\.yml:2:\d+: not valid YAML: duplicated mapping key/)
      // A group's config replaced with rows that reuse an id elsewhere in the tree.
      refuses(() => applyText(BASE, '- id: extras\n  config:\n    - {id: console, name: x}\n'), /entry 1 \("extras"\): the id "console" is then used by two rows/)
      // `__proto__` is an ordinary unknown key, never the prototype.
      refuses(() => applyText(BASE, '- id: console\n  __proto__: {disabled: true}\n'), /has the key "__proto__"/)
      expect(({} as any).disabled).to.equal(undefined)
    })

    it('a patch that swaps the plugin, mixes insert with other keys, or changes nothing', () => {
      refuses(() => applyText(BASE, "- id: console\n  name: '@me/other'\n  disabled: false\n"), /gives the name "@me\/other" but the row loads "@taskward\/plugin-console"; a patch cannot swap the plugin/)
      refuses(() => applyText(BASE, '- id: extras\n  disabled: true\n  insert: []\n'), /entry 1 inserts rows and also sets "disabled"/)
      refuses(() => applyText(BASE, '- id: console\n'), /entry 1 \("console"\) changes nothing/)
      refuses(() => applyText(BASE, "- id: console\n  name: '@taskward/plugin-console'\n"), /changes nothing/)
    })

    it('a file that is neither a list nor a mapping, and entries that are not mappings', () => {
      for (const text of ['hello\n', '42\n', 'true\n', '"- id: x"\n']) {
        refuses(() => applyText(BASE, text, 'extra.yml'), /^extra\.yml must be a list of entries like "- id: console" \+ "  disabled: true", or "- insert: \[\{id, name, config\}\]"\.$/)
      }
      refuses(() => applyText(BASE, '- console\n'), /entry 1 must be a mapping/)
      refuses(() => applyText(BASE, '- [console]\n'), /entry 1 must be a mapping/)
      refuses(() => applyText(BASE, '- insert: {id: audit, name: x}\n'), /entry 1: "insert" must be a list of rows/)
    })

    it('duplicate ids after an insert, at the root or inside a group', () => {
      refuses(() => applyText(BASE, '- insert:\n    - {id: console, name: x}\n'), /entry 1 inserts "console": the id "console" is then used by two rows; patch the existing row instead, or choose another id/)
      refuses(() => applyText(BASE, '- insert:\n    - {id: a, name: x}\n    - {id: a, name: y}\n'), /inserts "a": the id "a" is then used by two rows/)
      refuses(() => applyText(BASE, '- id: extras\n  insert:\n    - {id: server, name: x}\n'), /inserts "server": the id "server" is then used by two rows/)
      refuses(() => applyText(BASE, '- insert:\n    - {id: g, name: cordis/group, group: true, config: [{id: lint, name: x}]}\n'), /the id "lint" is then used by two rows/)
      refuses(() => checkBase(parse('- id: a\n  name: x\n- id: a\n  name: y\n', 'cordis.yml')), /^cordis\.yml: the id "a" is used by two rows; ids must be unique across the tree, group rows included\.$/)
    })

    it('a group insert into a non-group row or an unknown row', () => {
      refuses(() => applyText(BASE, '- id: console\n  insert:\n    - {id: audit, name: x}\n'),
        /entry 1 inserts into "console", which is not a group \(a group row has "group: true" and its rows under "config"\); leave out "id" to add the rows at the top level/)
      refuses(() => applyText(BASE, '- id: nowhere\n  insert:\n    - {id: audit, name: x}\n'), /entry 1 inserts into "nowhere", which names no row\. Known ids: server/)
    })

    it('rows and values of the wrong shape', () => {
      refuses(() => applyText(BASE, '- insert:\n    - {id: audit}\n'), /entry 1, row 1 \("audit"\) needs a "name"/)
      refuses(() => applyText(BASE, '- insert:\n    - {id: audit, name: x, isolate: {}}\n'), /entry 1, row 1 has the key "isolate"; a row has id, name, config, disabled, inject, group/)
      refuses(() => applyText(BASE, '- insert:\n    - {id: "a:b", name: x}\n'), /the id "a:b" contains ":"/)
      // A line break in an id would end the dump's "#    <id>: <history>" comment and turn the rest into a row.
      refuses(() => applyText(BASE, '- id: extras\n  insert:\n    - {id: "x\\n- injected", name: ok}\n'),
        /^cordis\.patch\.yml: entry 1, row 1: the id "x\\n- injected" holds a line break or another control character; choose a plain id\.$/)
      refuses(() => applyText(BASE, '- insert:\n    - {id: "tab\\there", name: x}\n'), /holds a line break or another control character/)
      // A patch naming such an id is refused on one line too.
      refuses(() => applyText(BASE, '- id: "a\\nb"\n  disabled: true\n'), /^cordis\.patch\.yml: entry 1 patches "a\\nb", which names no row/)
      refuses(() => applyText(BASE, '- id: console\n  disabled: "yes"\n'), /"disabled" must be true or false/)
      refuses(() => applyText(BASE, '- id: console\n  inject: 5\n'), /"inject" must be a list of service names or a mapping/)
      // cordis evaluates !!js only in config: elsewhere it would be an odd mapping, not an expression.
      refuses(() => applyText(BASE, '- id: console\n  inject: !!js "[\'database\']"\n'), /entry 1 \("console"\): "inject" holds a !!js expression; cordis evaluates !!js only inside "config"/)
      refuses(() => applyText(BASE, '- insert:\n    - {id: a, name: x, inject: {database: !!js "true"}}\n'), /"inject" holds a !!js expression/)
      refuses(() => applyText(BASE, '- id: console\n  group: maybe\n'), /"group" must be true or false/)
      refuses(() => applyText(BASE, '- id: console\n  group: true\n  config: {a: 1}\n'), /makes a group whose "config" is not a list of rows/)
      refuses(() => applyText(BASE, '- id: extras\n  config: [5]\n'), /entry 1, the patched row \("extras"\), group row 1 must be a row/)
    })

    it('YAML tags beyond !!js, and aliases of mappings, are refused with the file and position', () => {
      const tags = [
        '- id: console\n  config: !!binary aGVsbG8=\n',
        '- id: console\n  config: {at: !!timestamp 2020-01-01}\n',
        '- id: console\n  config: !foo bar\n',
        '- id: console\n  config: !<tag:example.com,2000:x> bar\n',
        '- id: console\n  config: !!python/object:os.system {}\n',
        '- id: console\n  config: !!set {a, b}\n',
      ]
      for (const text of tags) {
        refuses(() => applyText(BASE, text), /^cordis\.patch\.yml:2:\d+: not valid YAML: unknown tag .* \(host config files allow JSON values and !!js "expression" only\)\.$/)
      }
      refuses(() => applyText(BASE, '- id: console\n  config: !!js {a: 1}\n'), /cordis\.patch\.yml:2:\d+: not valid YAML: .*!!js/)
      // A few nested aliases would print an exponentially large effective file.
      const laughs = 'a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n'
      refuses(() => parse(`- id: console\n  config:\n    ${laughs.replace(/\n(?=.)/g, '\n    ')}`, 'bomb.yml'),
        /^bomb\.yml:3: a YAML anchor \(&name\) lets aliases \(\*name\) repeat a value; write the value out in full/)
      // One long string repeated by aliases: a 26 kB file would print a 40 MB effective file.
      const long = `- id: server\n  config:\n    a: &s "${'x'.repeat(20_000)}"\n    b: [${Array(2000).fill('*s').join(', ')}]\n`
      refuses(() => parse(long, 'strings.yml'), /^strings\.yml:3: a YAML anchor \(&name\)/)
      // An anchor nothing refers to yet is refused too (a later layer cannot refer to it anyway); "&" in a value is not an anchor.
      refuses(() => parse('- &row {id: a, name: x}\n', 'anchor.yml'), /^anchor\.yml:1: a YAML anchor/)
      expect(parse('- {id: "a&b", name: "x & y"}\n', 'amp.yml')).to.deep.equal([{ id: 'a&b', name: 'x & y' }])
      // cordis's loader evaluates any {__jsExpr} mapping in config as !!js: the dump says so instead of hiding it.
      const plain = applyText(BASE, "- id: server\n  config: {port: {__jsExpr: '1 + 1'}}\n")
      expect(renderComposed(plain, new Map())).to.contain('port: !!js 1 + 1')
      // !!js stays allowed, and opaque.
      expect(applyText(BASE, '- id: server\n  config: {port: !!js "+process.env.PORT"}\n')[0].config).to.deep.equal({ port: { __jsExpr: '+process.env.PORT' } })
    })
  })

  describe('provenance and the dump', () => {
    const layers = [
      { file: 'cordis.ci.yml', layer: parse("- insert:\n    - {id: audit, name: '@taskward/example-plugin-audit'}\n", 'cordis.ci.yml') },
      { file: 'cordis.local.yml', layer: parse('- id: console\n  disabled: true\n- id: audit\n  config: {requireNote: true}\n', 'cordis.local.yml') },
      { file: '/x/extra.yml', layer: parse("- id: console\n  disabled: true\n- id: extras\n  insert:\n    - {id: cost, name: '@me/cost'}\n", '/x/extra.yml') },
    ]

    it('records, per row, the file that made it and the files that changed it (a patch that changes nothing is not counted)', () => {
      const { rows, provenance } = compose(BASE, 'cordis.yml', layers)
      expect(rows.map((r) => r.id)).to.deep.equal(['server', 'supervisor', 'console', 'extras', 'audit'])
      expect(Object.fromEntries(provenance)).to.deep.equal({
        server: { origin: 'cordis.yml', patchedBy: [] },
        supervisor: { origin: 'cordis.yml', patchedBy: [] },
        console: { origin: 'cordis.yml', patchedBy: ['cordis.local.yml'] },
        extras: { origin: 'cordis.yml', patchedBy: ['/x/extra.yml'] },
        lint: { origin: 'cordis.yml', patchedBy: [] },
        cost: { origin: '/x/extra.yml', patchedBy: [] },
        audit: { origin: 'cordis.ci.yml', patchedBy: ['cordis.local.yml'] },
      })
    })

    it('rows a patch turns into group rows (group: true on a row whose config holds rows) are that layer\'s', () => {
      const base: HostRow[] = [{ id: 'bundle', name: 'cordis/group', config: [{ id: 'inner', name: '@me/inner' }] }]
      const { provenance } = compose(base, 'cordis.yml', [{ file: 'cordis.local.yml', layer: parse('- id: bundle\n  group: true\n', 'cordis.local.yml') }])
      expect(Object.fromEntries(provenance)).to.deep.equal({
        bundle: { origin: 'cordis.yml', patchedBy: ['cordis.local.yml'] },
        inner: { origin: 'cordis.local.yml', patchedBy: [] },
      })
    })

    it('prints one loadable YAML document, each run of rows headed by its history', () => {
      const { rows, provenance } = compose(BASE, 'cordis.yml', layers)
      const text = renderComposed(rows, provenance, ['composed'])
      expect(text.split('\n').filter((line) => line.startsWith('#'))).to.deep.equal([
        '# composed',
        '# == cordis.yml',
        '# == cordis.yml, patched by cordis.local.yml',
        '# == cordis.yml, patched by /x/extra.yml',
        '#    lint: cordis.yml',
        '#    cost: /x/extra.yml',
        '# == cordis.ci.yml, patched by cordis.local.yml',
      ])
      expect(text.indexOf('# == cordis.yml\n- id: server')).to.equal(text.indexOf('# == cordis.yml\n'))
      expect(checkBase(parse(text, 'dump'))).to.deep.equal(rows)
    })

    it('a file path with a line break stays inside its comment: the printed rows are the composed rows', () => {
      const file = '/tmp/odd\n- id: injected\n  name: evil'
      const { rows, provenance } = compose(BASE, 'cordis.yml', [
        { file, layer: parse("- id: extras\n  insert:\n    - {id: cost, name: '@me/cost'}\n- id: console\n  disabled: true\n", 'odd.yml') },
      ])
      const text = renderComposed(rows, provenance, [`composed from ${file}`])
      expect(text).to.contain('# == cordis.yml, patched by /tmp/odd\\n- id: injected\\n  name: evil\n')
      expect(checkBase(parse(text, 'dump'))).to.deep.equal(rows)
    })
  })
})

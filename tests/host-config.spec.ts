import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { freePort } from '@taskward/testkit'
import {
  applyOverlay, checkBase, effectiveConfigPath, HostConfigError, overlayFiles, parse, resolveHostConfig, type HostRow,
} from '../scripts/host-config.mjs'

const ROOT = join(import.meta.dirname, '..')
const BASE: HostRow[] = [
  { id: 'server', name: '@cordisjs/plugin-server', config: { port: 1 } },
  { id: 'supervisor', name: '@taskward/plugin-supervisor', config: { automaticContinuation: true, reviewerModel: 'scripted' } },
  { id: 'console', name: '@taskward/plugin-console' },
]
const AUDIT = { id: 'audit', name: '@taskward/example-plugin-audit', config: { requireNote: false } }

function refuses(fn: () => unknown, pattern: RegExp) {
  expect(fn).to.throw(HostConfigError, pattern)
}

/** A config folder inside the repository (so plugin names resolve from its node_modules), removed after. */
async function configDir(files: Record<string, string>) {
  await mkdir(join(ROOT, '.scratch'), { recursive: true })
  const dir = await mkdtemp(join(ROOT, '.scratch', 'host-config-'))
  await copyFile(join(ROOT, 'cordis.yml'), join(dir, 'cordis.yml'))
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text)
  return dir
}

describe('host config overlays', () => {
  const dirs: string[] = []
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
  })
  const dir = async (files: Record<string, string>) => {
    const made = await configDir(files)
    dirs.push(made)
    return made
  }

  describe('rules', () => {
    it('a patch replaces the whole config of the row with that id (no deep merge)', () => {
      const rows = applyOverlay(BASE, { patch: [{ id: 'supervisor', config: { reviewerModel: 'openai' } }] }, 'o.yml')
      expect(rows[1]).to.deep.equal({ id: 'supervisor', name: '@taskward/plugin-supervisor', config: { reviewerModel: 'openai' } })
      expect(BASE[1].config).to.deep.include({ automaticContinuation: true })  // the input is not mutated
    })

    it('a patch sets or clears disabled', () => {
      const off = applyOverlay(BASE, { patch: [{ id: 'console', disabled: true }] }, 'o.yml')
      expect(off[2]).to.deep.equal({ id: 'console', name: '@taskward/plugin-console', disabled: true })
      const on = applyOverlay(off, { patch: [{ id: 'console', disabled: false }] }, 'o2.yml')
      expect(on[2]).to.deep.equal({ id: 'console', name: '@taskward/plugin-console' })
    })

    it('insert appends rows; their ids must be new', () => {
      const rows = applyOverlay(BASE, { insert: [AUDIT] }, 'o.yml')
      expect(rows.map((r) => r.id)).to.deep.equal(['server', 'supervisor', 'console', 'audit'])
      refuses(() => applyOverlay(BASE, { insert: [{ id: 'console', name: 'x' }] }, 'o.yml'), /insert "console" reuses an existing id/)
      refuses(() => applyOverlay(BASE, { insert: [{ id: 'x' }] }, 'o.yml'), /row "x" needs a "name"/)
    })

    it('an unknown id in a patch is a clear error naming the known ids', () => {
      refuses(() => applyOverlay(BASE, { patch: [{ id: 'supervisr', disabled: true }] }, 'cordis.local.yml'),
        /cordis\.local\.yml: patch "supervisr" names no row\. Known ids: server, supervisor, console\. To add a plugin, put its row under "insert:"/)
    })

    it('refuses malformed overlays: a bare list, unknown keys, a patch that renames or changes nothing', () => {
      refuses(() => applyOverlay(BASE, [AUDIT], 'o.yml'), /must be a mapping with "patch" and\/or "insert"/)
      refuses(() => applyOverlay(BASE, { add: [AUDIT] }, 'o.yml'), /unknown key "add"/)
      refuses(() => applyOverlay(BASE, { patch: [{ id: 'console', name: 'other' }] }, 'o.yml'), /may set only "config" and "disabled"/)
      refuses(() => applyOverlay(BASE, { patch: [{ id: 'console' }] }, 'o.yml'), /changes nothing/)
      refuses(() => applyOverlay(BASE, { patch: [{ id: 'console', disabled: 'yes' }] }, 'o.yml'), /"disabled" must be true or false/)
      refuses(() => applyOverlay(BASE, { patch: [{ id: 'console', disabled: true }, { id: 'console', config: {} }] }, 'o.yml'), /patched twice/)
      expect(applyOverlay(BASE, null, 'empty.yml')).to.equal(BASE)
    })

    it('within one overlay, patches apply before its inserts; a later overlay may patch an inserted row', () => {
      refuses(() => applyOverlay(BASE, { patch: [{ id: 'audit', disabled: true }], insert: [AUDIT] }, 'o.yml'), /patch "audit" names no row/)
      const profile = applyOverlay(BASE, { insert: [AUDIT] }, 'cordis.ci.yml')
      const local = applyOverlay(profile, { patch: [{ id: 'audit', config: { requireNote: true } }] }, 'cordis.local.yml')
      expect(local.at(-1)).to.deep.equal({ ...AUDIT, config: { requireNote: true } })
    })

    it('keeps !!js expressions opaque and writes them back as !!js', () => {
      const rows = checkBase(parse("- id: server\n  name: s\n  config:\n    port: !!js \"+(process.env.PORT || 5140)\"\n", 'cordis.yml'))
      expect(rows[0].config).to.deep.equal({ port: { __jsExpr: '+(process.env.PORT || 5140)' } })
      refuses(() => checkBase(parse('- id: a\n  name: x\n- id: a\n  name: y\n', 'cordis.yml')), /the id "a" is used by two rows/)
    })
  })

  describe('files and precedence', () => {
    it('without overlays npm start boots cordis.yml itself', async () => {
      const root = await dir({})
      expect(effectiveConfigPath(root, {})).to.equal(join(root, 'cordis.yml'))
    })

    it('applies cordis.<profile>.yml, then cordis.local.yml: the local file wins', async () => {
      const root = await dir({
        'cordis.ci.yml': 'patch:\n  - id: supervisor\n    config: {reviewerModel: ci}\ninsert:\n  - id: audit\n    name: "@taskward/example-plugin-audit"\n',
        'cordis.local.yml': 'patch:\n  - id: supervisor\n    config: {reviewerModel: local}\n',
      })
      expect(overlayFiles(root, { TASKWARD_PROFILE: 'ci' }).map((f) => f.source)).to.deep.equal(['cordis.ci.yml', 'cordis.local.yml'])
      const { rows, sources } = resolveHostConfig(root, { TASKWARD_PROFILE: 'ci' })
      expect(sources).to.deep.equal(['cordis.yml', 'cordis.ci.yml', 'cordis.local.yml'])
      expect(rows.find((r) => r.id === 'supervisor')!.config).to.deep.equal({ reviewerModel: 'local' })
      expect(rows.at(-1)!.id).to.equal('audit')
      // Without the profile only the local file applies.
      expect(resolveHostConfig(root, {}).rows.some((r) => r.id === 'audit')).to.equal(false)
    })

    it('refuses a missing profile file and a profile name that is a path', async () => {
      const root = await dir({})
      refuses(() => overlayFiles(root, { TASKWARD_PROFILE: 'staging' }), /cordis\.staging\.yml does not exist/)
      refuses(() => overlayFiles(root, { TASKWARD_PROFILE: '../../etc/x' }), /is not a profile name/)
      refuses(() => overlayFiles(root, { TASKWARD_PROFILE: 'local' }), /is not a profile name/)
    })

    it('writes the merged rows to .cordis.effective.yml, !!js intact', async () => {
      const root = await dir({ 'cordis.local.yml': 'patch:\n  - id: console\n    disabled: true\n' })
      const path = effectiveConfigPath(root, {})
      expect(path).to.equal(join(root, '.cordis.effective.yml'))
      const text = await readFile(path, 'utf8')
      expect(text).to.match(/^# Generated by npm start from cordis\.yml \+ cordis\.local\.yml/)
      expect(text).to.contain("process.env.PORT || 5140")
      const rows = checkBase(parse(text, 'effective'))
      expect(rows.find((r) => r.id === 'console')).to.include({ disabled: true })
      expect((rows.find((r) => r.id === 'server')!.config as any).port).to.deep.equal({ __jsExpr: '+(process.env.PORT || 5140)' })
    })
  })

  describe('booting with the cordis CLI', function () {
    this.timeout(120_000)

    it('loads a plugin inserted by cordis.local.yml and leaves out a disabled row', async () => {
      const root = await dir({
        'cordis.local.yml': [
          'patch:',
          '  - id: console',
          '    disabled: true',
          'insert:',
          '  - id: audit',
          "    name: '@taskward/example-plugin-audit'",
          '    config:',
          '      requireNote: false',
          '',
        ].join('\n'),
      })
      const config = effectiveConfigPath(root, {})
      const data = await mkdtemp(join(ROOT, '.scratch', 'host-config-data-'))
      dirs.push(data)
      const port = await freePort()
      const cli = join(dirname(createRequire(import.meta.url).resolve('cordis/package.json')), 'lib/bin/cordis.mjs')
      const env = {
        ...process.env, PORT: String(port), TASKWARD_DATA: data, TASKWARD_DEMO: '0',
        NODE_OPTIONS: [process.env.NODE_OPTIONS, '--import tsx', '--conditions source'].filter(Boolean).join(' '),
      }
      const child = spawn(process.execPath, [cli, 'start', config], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
      let output = ''
      child.stdout.on('data', (chunk) => output += chunk)
      child.stderr.on('data', (chunk) => output += chunk)
      try {
        const deadline = Date.now() + 90_000
        while (!(await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok) {
          if (Date.now() > deadline) throw new Error(`the host did not answer; output:\n${output}`)
          await new Promise((resolve) => setTimeout(resolve, 300))
        }
        const token = /\/login\?token=([\w-]+)/.exec(output)?.[1]
        // The console row is disabled: its API is not served.
        const consoleApi = await fetch(`http://127.0.0.1:${port}/api/console/sessions`, { headers: { authorization: `Bearer ${token}` } })
        expect(consoleApi.status, output).to.equal(404)
        await new Promise((resolve) => setTimeout(resolve, 1000))
        expect(output).to.contain('apply plugin @taskward/example-plugin-audit')
        expect(output).to.not.contain('apply plugin @taskward/plugin-console')
        expect(output, 'no plugin failed').to.not.match(/\[E\]/)
      } finally {
        try { process.kill(-child.pid!, 'SIGKILL') } catch {}
      }
    })
  })
})

import { expect } from 'chai'
import { execFileSync, spawn } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort } from '@taskward/testkit'
import {
  checkBase, effectiveConfigPath, HostConfigError, layerFiles, parse, resolveHostConfig,
} from '../scripts/host-config.mjs'

const ROOT = join(import.meta.dirname, '..')
const AUDIT_ROW = "    - {id: audit, name: '@taskward/example-plugin-audit', config: {requireNote: false}}"

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

/** `npm start -- …args` as a user runs it, in its own process group; the caller kills it if it keeps running. */
function npmStart(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const child = spawn('npm', ['start', '--', ...args], {
    cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  })
  const run = { stdout: '', stderr: '', pid: child.pid!, exited: new Promise<number | null>((resolve) => child.on('exit', resolve)) }
  child.stdout.on('data', (chunk) => run.stdout += chunk)
  child.stderr.on('data', (chunk) => run.stderr += chunk)
  return run
}

describe('host config layers', () => {
  const dirs: string[] = []
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
  })
  const dir = async (files: Record<string, string>) => {
    const made = await configDir(files)
    dirs.push(made)
    return made
  }

  describe('files and precedence', () => {
    it('without layers npm start boots cordis.yml itself', async () => {
      const root = await dir({})
      expect(effectiveConfigPath(root, {})).to.equal(join(root, 'cordis.yml'))
    })

    it('applies cordis.<profile>.yml, cordis.local.yml, cordis.patch.yml, then each --patch file in order: the last wins', async () => {
      const root = await dir({
        // The older mapping form still reads; the list form is DSH's.
        'cordis.ci.yml': `patch:\n  - id: supervisor\n    config: {reviewerModel: ci}\ninsert:\n${AUDIT_ROW}\n`,
        'cordis.local.yml': '- id: supervisor\n  config: {reviewerModel: local}\n',
        'cordis.patch.yml': '- id: supervisor\n  config: {reviewerModel: patch}\n- id: audit\n  disabled: true\n',
        'one.yml': '- id: supervisor\n  config: {reviewerModel: one}\n',
        'two.yml': '- id: supervisor\n  config: {reviewerModel: two}\n- id: audit\n  disabled: false\n',
      })
      const env = { TASKWARD_PROFILE: 'ci' }
      const patches = ['one.yml', join(root, 'two.yml')]
      expect(layerFiles(root, env, patches, root).map((f) => f.source))
        .to.deep.equal(['cordis.ci.yml', 'cordis.local.yml', 'cordis.patch.yml', join(root, 'one.yml'), join(root, 'two.yml')])
      const { rows, provenance, sources } = resolveHostConfig(root, env, { patches, cwd: root })
      expect(sources[0]).to.equal('cordis.yml')
      expect(rows.find((r) => r.id === 'supervisor')!.config).to.deep.equal({ reviewerModel: 'two' })
      expect(rows.at(-1)).to.deep.equal({ id: 'audit', name: '@taskward/example-plugin-audit', config: { requireNote: false } })
      expect(provenance.get('audit')).to.deep.equal({ origin: 'cordis.ci.yml', patchedBy: ['cordis.patch.yml', join(root, 'two.yml')] })
      // Without the profile, its insert is gone, and cordis.patch.yml's patch of it names no row.
      refuses(() => resolveHostConfig(root, {}), /^cordis\.patch\.yml: entry 2 patches "audit", which names no row/)
    })

    it('refuses a missing profile or --patch file and a profile name that is a path or a reserved name', async () => {
      const root = await dir({})
      refuses(() => layerFiles(root, { TASKWARD_PROFILE: 'staging' }), /cordis\.staging\.yml does not exist/)
      for (const name of ['../../etc/x', 'local', 'patch', 'effective']) refuses(() => layerFiles(root, { TASKWARD_PROFILE: name }), /is not a profile name/)
      refuses(() => layerFiles(root, {}, ['missing.yml'], root), /^--patch missing\.yml: no such file/)
    })

    it('refuses a --patch (or cordis.patch.yml) that is a directory or a FIFO before reading it; a symlink to a file is read', async () => {
      const root = await dir({ 'real.yml': '- id: console\n  disabled: true\n' })
      await mkdir(join(root, 'folder'))
      await symlink(join(root, 'real.yml'), join(root, 'link.yml'))
      refuses(() => layerFiles(root, {}, ['folder'], root), new RegExp(`^--patch folder: ${join(root, 'folder')} is a directory; give the path of a patch list file\\.$`))
      expect(resolveHostConfig(root, {}, { patches: ['link.yml'], cwd: root }).provenance.get('console'))
        .to.deep.equal({ origin: 'cordis.yml', patchedBy: [join(root, 'link.yml')] })
      await mkdir(join(root, 'cordis.patch.yml'))
      refuses(() => layerFiles(root, {}), /^cordis\.patch\.yml: .* is a directory/)
      await rm(join(root, 'cordis.patch.yml'), { recursive: true })
      // A FIFO nobody writes to: reading it would block npm start for good (run in a child, with a deadline).
      execFileSync('mkfifo', [join(root, 'pipe.yml')])
      const child = spawn(process.execPath, [join(ROOT, 'scripts/start.mjs'), '--config', join(root, 'cordis.yml'), '--patch', join(root, 'pipe.yml'), '--dump-config'],
        { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', (chunk) => stderr += chunk)
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      const code = await new Promise((resolve) => child.on('close', resolve))
      clearTimeout(timer)
      expect(code, stderr).to.equal(2)
      expect(stderr).to.contain(`CONFIG_INVALID: --patch ${join(root, 'pipe.yml')}: ${join(root, 'pipe.yml')} is a FIFO`)
    })

    it('writes the composed rows to .cordis.effective.<hash>.yml with their history, !!js intact', async () => {
      const root = await dir({ 'cordis.local.yml': '- id: console\n  disabled: true\n' })
      const path = effectiveConfigPath(root, {})
      expect(path).to.match(new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\.cordis\\.effective\\.[0-9a-f]{12}\\.yml$`))
      const text = await readFile(path, 'utf8')
      expect(text).to.match(/^# Generated by npm start from cordis\.yml \+ cordis\.local\.yml/)
      expect(text).to.contain('# == cordis.yml, patched by cordis.local.yml\n- id: console')
      expect(text).to.contain("process.env.PORT || 5140")
      const rows = checkBase(parse(text, 'effective'))
      expect(rows.find((r) => r.id === 'console')).to.include({ disabled: true })
      expect((rows.find((r) => r.id === 'server')!.config as any).port).to.deep.equal({ __jsExpr: '+(process.env.PORT || 5140)' })
    })

    it('gives two hosts started at once with different layers each its own file (neither boots the other\'s)', async () => {
      const root = await dir({ 'one.yml': '- id: console\n  disabled: true\n', 'two.yml': '- id: console\n  config: {}\n' })
      const first = effectiveConfigPath(root, {}, { patches: [join(root, 'one.yml')] })
      const second = effectiveConfigPath(root, {}, { patches: [join(root, 'two.yml')] })
      expect(second).to.not.equal(first)
      expect(await readFile(first, 'utf8')).to.contain('one.yml').and.not.contain('two.yml')
      expect(await readFile(second, 'utf8')).to.contain('two.yml')
      expect(effectiveConfigPath(root, {}, { patches: [join(root, 'one.yml')] }), 'the same layers, the same file').to.equal(first)
      // The composed rows may carry a layer's secret: the file is its owner's alone.
      for (const file of [first, second]) expect((await stat(file)).mode & 0o777, file).to.equal(0o600)
    })

    it('keeps every composed file out of git: the hashed ones, one half written, and the .cordis.effective.yml older starts left', async () => {
      // They hold the local layers' rows (an apiKey in cordis.local.yml, say), so `git add -A` must not take them.
      const root = await dir({ 'cordis.local.yml': '- id: console\n  disabled: true\n' })
      const hashed = effectiveConfigPath(root, {}).slice(root.length + 1)
      for (const name of [hashed, `${hashed}.${process.pid}`, '.cordis.effective.yml', '.cordis.effective.yml.4242']) {
        const ignored = (() => {
          try {
            execFileSync('git', ['check-ignore', '-q', name], { cwd: ROOT })
            return true
          } catch {
            return false
          }
        })()
        expect(ignored, `${name} is git-ignored`).to.equal(true)
      }
    })
  })

  describe('npm start', function () {
    this.timeout(150_000)

    it('--dump-config prints the composed rows with each row\'s history and exits 0 without starting anything', async () => {
      const root = await dir({
        'cordis.patch.yml': `- id: console\n  disabled: true\n- insert:\n${AUDIT_ROW}\n`,
        'extra.yml': '- id: audit\n  config: {requireNote: true}\n',
      })
      const run = npmStart(['--config', join(root, 'cordis.yml'), '--patch', join(root, 'extra.yml'), '--dump-config'])
      expect(await run.exited, run.stderr).to.equal(0)
      const comments = run.stdout.split('\n').filter((line) => line.startsWith('# '))
      expect(comments).to.deep.equal([
        `# Host config composed by npm start from cordis.yml + cordis.patch.yml + ${join(root, 'extra.yml')} (not started; !!js shown unevaluated).`,
        '# == cordis.yml',
        '# == cordis.yml, patched by cordis.patch.yml',
        `# == cordis.patch.yml, patched by ${join(root, 'extra.yml')}`,
      ])
      const yaml = run.stdout.slice(run.stdout.indexOf('# Host config'))
      const rows = checkBase(parse(yaml, 'dump'))
      expect(rows.at(-2)).to.deep.equal({ id: 'console', name: '@taskward/plugin-console', disabled: true, config: rows.at(-2)!.config })
      expect(rows.at(-1)).to.deep.equal({ id: 'audit', name: '@taskward/example-plugin-audit', config: { requireNote: true } })
      expect(yaml, '!!js printed, not evaluated').to.contain('port: !!js +(process.env.PORT || 5140)')
      // Nothing started, nothing written.
      expect(run.stdout + run.stderr).to.not.match(/apply plugin|login\?token/)
      expect((await readdir(root)).filter((name) => name.startsWith('.cordis.effective'))).to.deep.equal([])
    })

    it('relative --config and --patch paths are meant from where the user typed the command, even with an INIT_CWD inherited from another npm script', async () => {
      const root = await dir({ 'mine.yml': '- id: console\n  disabled: true\n' })
      // npm start from a folder: npm runs the script in the package root and sets INIT_CWD to that folder.
      const viaNpm = spawn('npm', ['start', '--silent', '--', '--config', 'cordis.yml', '--patch', 'mine.yml', '--dump-config'],
        { cwd: root, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
      // node scripts/start.mjs run in that folder by a process that inherited INIT_CWD (and npm_package_json) from `npm test` in the root.
      const direct = spawn(process.execPath, [join(ROOT, 'scripts/start.mjs'), '--config', 'cordis.yml', '--patch', 'mine.yml', '--dump-config'],
        { cwd: root, env: { ...process.env, INIT_CWD: ROOT, npm_package_json: join(ROOT, 'package.json') }, stdio: ['ignore', 'pipe', 'pipe'] })
      const runs = [viaNpm, direct].map((child) => {
        const run = { output: '', code: new Promise((resolve) => child.on('close', resolve)) }
        child.stdout.on('data', (chunk) => run.output += chunk)
        child.stderr.on('data', (chunk) => run.output += chunk)
        return run
      })
      for (const run of runs) {
        expect(await run.code, run.output).to.equal(0)
        expect(run.output).to.contain(`# == cordis.yml, patched by ${join(root, 'mine.yml')}\n- id: console`)
      }
    })

    it('refuses a bad --patch file with one CONFIG_INVALID line naming the file and the entry, exit 2, nothing started', async () => {
      const root = await dir({ 'bad.yml': '- id: console\n  disabled: true\n- id: supervisr\n  disabled: true\n' })
      const bad = join(root, 'bad.yml')
      for (const extra of [['--dump-config'], ['--no-demo']]) {
        const run = npmStart(['--config', join(root, 'cordis.yml'), '--patch', bad, ...extra])
        expect(await run.exited, run.stdout + run.stderr).to.equal(2)
        const lines = run.stderr.split('\n').filter((line) => line && !line.startsWith('>') && !/^npm (error|ERR)/.test(line))
        expect(lines).to.deep.equal([`CONFIG_INVALID: ${bad}: entry 2 patches "supervisr", which names no row. Known ids: server, database, host, workspace, admission, `
          + 'openai, supervisor, repair, recovery, console. To add a plugin, use "- insert: [{id, name, config}]".'])
        expect(run.stdout).to.not.match(/apply plugin|login\?token/)
      }
      // An option that needs a value and has none (or another option in its place) is refused, not read as empty.
      const bareOptions: [string[], string][] = [[['--dump-config', '--data'], '--data'], [['--data', '--dump-config'], '--data'], [['--dump-config', '--port'], '--port']]
      for (const [args, option] of bareOptions) {
        const bare = npmStart(['--config', join(root, 'cordis.yml'), ...args])
        expect(await bare.exited, bare.stdout + bare.stderr).to.equal(2)
        expect(bare.stderr).to.contain(`${option} needs a value.`)
      }
      const missing = npmStart(['--config', join(root, 'cordis.yml'), '--patch', join(root, 'nope.yml'), '--dump-config'])
      expect(await missing.exited).to.equal(2)
      expect(missing.stderr).to.contain(`CONFIG_INVALID: --patch ${join(root, 'nope.yml')}: no such file`)
    })

    it('boots cordis.patch.yml and --patch layers: a disabled row stays out, a row inserted into a group is loaded', async () => {
      const root = await dir({
        'cordis.patch.yml': '- id: console\n  disabled: true\n- insert:\n    - {id: extras, name: cordis/group, group: true, config: []}\n',
        'extra.yml': `- id: extras\n  insert:\n${AUDIT_ROW}\n`,
      })
      const port = await freePort()
      // Every path relative, typed in the config folder: the data directory lands there too.
      const run = npmStart(['--config', 'cordis.yml', '--patch', 'extra.yml', '--data', 'data', '--no-demo'], { PORT: String(port) }, root)
      const output = () => run.stdout + run.stderr
      try {
        const deadline = Date.now() + 120_000
        while (!/\/login\?token=([\w-]+)/.test(output())) {
          if (Date.now() > deadline) throw new Error(`the host did not print its login link; output:\n${output()}`)
          await new Promise((resolve) => setTimeout(resolve, 300))
        }
        const token = /\/login\?token=([\w-]+)/.exec(output())![1]
        expect(await (await fetch(`http://127.0.0.1:${port}/health`)).json()).to.deep.equal({ ok: true, ready: true })
        // The console row is disabled: its API is not served.
        const consoleApi = await fetch(`http://127.0.0.1:${port}/api/console/sessions`, { headers: { authorization: `Bearer ${token}` } })
        expect(consoleApi.status, output()).to.equal(404)
        expect(output()).to.contain('apply plugin @taskward/example-plugin-audit')
        expect(output()).to.not.contain('apply plugin @taskward/plugin-console')
        expect(output(), 'no plugin failed').to.not.match(/\[E\]/)
        expect(await readdir(join(root, 'data')), 'the data directory, relative to where npm start was typed').to.not.be.empty
        const [name] = (await readdir(root)).filter((file) => file.startsWith('.cordis.effective.'))
        const effective = await readFile(join(root, name), 'utf8')
        expect(effective).to.contain(`#    audit: ${join(root, 'extra.yml')}`)
      } finally {
        try { process.kill(-run.pid, 'SIGKILL') } catch {}
        await Promise.race([run.exited, new Promise((resolve) => setTimeout(resolve, 5000))])
      }
    })
  })
})

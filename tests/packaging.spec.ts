import { expect } from 'chai'
import { execFile, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '@taskward/testkit'

/*
 * The packages as a user gets them from a registry: build, `npm pack` each published package, install the
 * tarballs with cordis@3.18.1 into a scratch project, boot it with plain `npx cordis start`, import every
 * package as ESM and CJS, and type-check a consumer under `moduleResolution: nodenext`.
 * It needs the npm registry (the scratch install), so it runs only with TASKWARD_TEST_PACKAGING=1 (npm test sets it; TASKWARD_TEST_PACKAGING=0 npm test skips it offline)
 * (`npm run test:packaging`); every step has a time bound.
 */
const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..')
const PUBLISHED = [
  '@taskward/protocol', '@taskward/cordis-compat', '@taskward/host', '@taskward/plugin-database', '@taskward/plugin-workspace', '@taskward/plugin-admission',
  '@taskward/plugin-supervisor', '@taskward/plugin-repair', '@taskward/plugin-recovery', '@taskward/plugin-console',
]
/** The console computes its asset folder from import.meta.url at load time; its CJS build cannot (see the report). */
const CJS = PUBLISHED.filter((name) => name !== '@taskward/plugin-console')

const CONSUMER = `
import type { Context } from 'cordis'
import type {} from '@taskward/plugin-supervisor'
import type {} from '@taskward/plugin-admission'
import { defineErrorCode, TaskwardError, transitionKind } from '@taskward/protocol'
import type { TaskTransition } from '@taskward/plugin-supervisor'

const CODE = defineErrorCode('consumer.refused', 409)
export function apply(ctx: Context) {
  ctx.supervisor.registerCompletionGate(async (_session, task) => new TaskwardError(CODE, 'no', { taskId: task.id }))
  ctx.on('supervisor/transition', (t: TaskTransition) => { void transitionKind(t.previous, t.next) })
  void ctx.sessions
  void ctx.admission
}
`

describe('packaging: the packed packages in a scratch project', function () {
  before(function () {
    if (process.env.TASKWARD_TEST_PACKAGING !== '1') this.skip()
  })
  this.timeout(900_000)
  let scratch: string

  after(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true })
  })

  it('packs, installs with cordis@3.18.1, boots with npx cordis start, imports as ESM and CJS, type-checks under nodenext', async () => {
    scratch = await mkdtemp(join(tmpdir(), 'taskward-packaging-'))
    const packs = join(scratch, 'packs')
    await mkdir(packs)
    await run('npm', ['run', 'build'], { cwd: ROOT, timeout: 300_000 })
    await run('npm', ['pack', '--pack-destination', packs, ...PUBLISHED.flatMap((name) => ['-w', name])], { cwd: ROOT, timeout: 120_000 })
    const tarballs = await readdir(packs)
    expect(tarballs).to.have.length(PUBLISHED.length)
    const app = join(scratch, 'app')
    await mkdir(app)
    const dependencies: Record<string, string> = { 'cordis': '3.18.1', '@cordisjs/plugin-server': '^0.2.9', 'minato': '^3.7.0' }
    for (const file of tarballs) {
      const name = PUBLISHED.find((n) => file.startsWith(n.slice(1).replace('/', '-') + '-'))!
      dependencies[name] = `file:${join(packs, file)}`
    }
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies }, null, 2))
    await run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts=false'], { cwd: app, timeout: 240_000 })

    // One cordis only: a nested copy would be another Context class.
    const { stdout: copies } = await run('find', ['node_modules', '-path', '*/cordis/package.json', '-not', '-path', '*/@cordisjs/*'], { cwd: app })
    expect(copies.trim().split('\n')).to.deep.equal(['node_modules/cordis/package.json'])

    // The console's routes alone (what the DSH adapter loads): an entry of their own, without the plugin.
    for (const name of [...PUBLISHED, '@taskward/plugin-console/web-console']) {
      await run(process.execPath, ['--input-type=module', '-e', `const m = await import('${name}'); if (!Object.keys(m).length) throw new Error('empty')`], { cwd: app, timeout: 60_000 })
    }
    for (const name of CJS) {
      await run(process.execPath, ['-e', `const m = require('${name}'); if (!Object.keys(m).length) throw new Error('empty')`], { cwd: app, timeout: 60_000 })
    }
    const { stdout: same } = await run(process.execPath, ['-e', `
      const esm = import('@taskward/protocol'); const cjs = require('@taskward/protocol')
      esm.then((m) => { cjs.defineErrorCode('scratch.cross', 418); const e = new cjs.TaskwardError('scratch.cross', 'x'); console.log(m.TaskwardError.is(e, 'scratch.cross'), m.httpStatusOf('scratch.cross')) })
    `], { cwd: app, timeout: 60_000 })
    expect(same.trim()).to.equal('true 418')

    await writeFile(join(app, 'consumer.ts'), CONSUMER)
    await writeFile(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
      files: ['consumer.ts'],
    }))
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app, timeout: 120_000 }).catch((error) => error)
    expect(checked.stdout ?? '', 'tsc under nodenext').to.equal('')

    const port = await freePort()
    await writeFile(join(app, 'cordis.yml'), [
      `- id: server\n  name: '@cordisjs/plugin-server'\n  config:\n    host: 127.0.0.1\n    port: ${port}`,
      "- id: database\n  name: '@taskward/plugin-database'\n  config:\n    driver: sqlite\n    path: taskward.db",
      "- id: host\n  name: '@taskward/host'\n  config:\n    connection:\n      announce: true",
      ...['workspace', 'admission', 'supervisor', 'repair', 'recovery', 'console'].map((n) => `- id: ${n}\n  name: '@taskward/plugin-${n}'`),
    ].join('\n') + '\n')
    const child = spawn('npx', ['cordis', 'start', 'cordis.yml'], { cwd: app, env: { ...process.env, TASKWARD_DATA: join(scratch, 'data'), TASKWARD_DEMO: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let output = ''
    child.stdout.on('data', (chunk) => output += chunk)
    child.stderr.on('data', (chunk) => output += chunk)
    try {
      const deadline = Date.now() + 90_000
      while (!(await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok) {
        if (Date.now() > deadline) throw new Error(`npx cordis start did not answer; output:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      // The link's line may still be arriving in pieces: wait for its end of line, not a token cut short.
      while (!/\/login\?token=[\w-]+\r?\n/.test(output)) {
        if (Date.now() > deadline) throw new Error(`npx cordis start printed no login link; output:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const token = /\/login\?token=([\w-]+)\r?\n/.exec(output)?.[1]
      const sessions = await fetch(`http://127.0.0.1:${port}/api/console/sessions`, { headers: { authorization: `Bearer ${token}` } })
      expect(sessions.status, output).to.equal(200)
    } finally {
      try { process.kill(-child.pid!, 'SIGKILL') } catch {}
    }
  })
})

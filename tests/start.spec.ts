import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { freePort, TestHost } from '@taskward/testkit'
import { RECORD_EVENT_TYPE, RECOVERY_NAMESPACE, SUPERVISOR_PROJECTION_KEY, type SessionEvent } from '@taskward/protocol'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const ROOT = join(import.meta.dirname, '..')

/** A copy of cordis.yml with `edit` applied, inside the checkout (so its packages resolve); removed by the caller. */
async function editedConfig(edit: (yaml: string) => string) {
  const dir = join(ROOT, '.scratch')
  await mkdir(dir, { recursive: true })
  const file = join(dir, `cordis-${process.pid}-${Date.now()}.yml`)
  const yaml = await readFile(join(ROOT, 'cordis.yml'), 'utf8')
  const edited = edit(yaml)
  expect(edited).to.not.equal(yaml)
  await writeFile(file, edited)
  return file
}

/** `npm start` as a newcomer runs it, in its own process group, on a temp data directory. */
async function startHost(args: string[], options: { untilLink?: boolean } = {}) {
  const data = await mkdtemp(join(tmpdir(), 'taskward-start-'))
  const port = await freePort()
  const child = spawn('npm', ['start', '--', ...args], {
    cwd: join(import.meta.dirname, '..'),
    // npm start's own threadpool size, whatever the runner's environment says.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'UV_THREADPOOL_SIZE')), PORT: String(port), TASKWARD_DATA: data },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  child.stdout.on('data', (chunk) => output += chunk)
  child.stderr.on('data', (chunk) => output += chunk)
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const base = `http://127.0.0.1:${port}`
  const host = {
    data, port, base, exited, pid: child.pid!,
    get output() { return output },
    get token() { return /\/login\?token=([\w-]+)/.exec(output)?.[1] },
    async waitFor(check: () => boolean | Promise<boolean>, what: string, timeout = 90_000) {
      const deadline = Date.now() + timeout
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${output}`)
        await sleep(300)
      }
    },
    api(path: string) {
      return fetch(base + path, { headers: { authorization: `Bearer ${host.token}` } })
    },
    async dispose() {
      // The whole group: npm, the start script, the cordis CLI and the host worker.
      try { process.kill(-child.pid!, 'SIGKILL') } catch {}
      await Promise.race([exited, sleep(5000)])
      await rm(data, { recursive: true, force: true })
    },
  }
  if (options.untilLink === false) await host.waitFor(async () => !!(await fetch(`${base}/health`).catch(() => undefined)), 'the host to answer')
  else await host.waitFor(async () => !!host.token && !!(await fetch(`${base}/health`).catch(() => undefined))?.ok, 'the host to answer')
  return host
}

/** `npm start` for real: the cordis CLI loads cordis.yml with every plugin, serves HTTP, stops on SIGINT. */
describe('npm start', function () {
  this.timeout(150_000)

  it('boots, answers a health request, prints the login link and stops cleanly on SIGINT', async () => {
    const host = await startHost(['--no-demo'])
    try {
      const health = await fetch(`${host.base}/health`)
      expect(await health.json()).to.deep.equal({ ok: true, ready: true })
      expect(host.output).to.match(new RegExp(`http://127\\.0\\.0\\.1:${host.port}/login\\?token=[\\w-]{40,}`))
      expect((await stat(join(host.data, 'taskward.db'))).isFile()).to.equal(true)
      // The host is not open to anyone who finds the port, and --no-demo created nothing.
      expect((await fetch(`${host.base}/login?token=wrong`)).status).to.equal(401)
      expect((await fetch(`${host.base}/api/console/sessions`)).status).to.equal(401)
      expect(await (await host.api('/api/console/sessions')).json()).to.deep.equal({ sessions: [] })
      // The host runs with npm start's file-system threads (libuv's default 4 held tool calls at scale).
      const { operatorToken } = JSON.parse(await readFile(join(host.data, 'taskward.host.json'), 'utf8'))
      const verbose: any = await (await fetch(`${host.base}/health?verbose`, { headers: { authorization: `Bearer ${operatorToken}` } })).json()
      expect(verbose.findings.find((finding: any) => finding.check === 'file-system threads'), JSON.stringify(verbose)).to.deep.equal({ check: 'file-system threads', verdict: 'ok', detail: '16 (UV_THREADPOOL_SIZE)' })

      // Ctrl-C in a terminal signals the whole foreground group: npm and the start script.
      process.kill(-host.pid, 'SIGINT')
      const code = await Promise.race([host.exited, sleep(20_000).then(() => 'timeout')])
      expect(code, host.output).to.not.equal('timeout')
      // The host ran its exit hooks rather than being killed.
      await host.waitFor(() => host.output.includes('terminated by SIGINT'), 'the clean shutdown', 10_000)
      await sleep(500)
      expect(await fetch(`${host.base}/health`).catch(() => undefined)).to.equal(undefined)
    } finally {
      await host.dispose()
    }
  })

  it('prints the login link only once every plugin of cordis.yml is up: the first request finds the console', async () => {
    const host = await startHost(['--no-demo'], { untilLink: false })
    try {
      // Poll the output tightly: the moment the link appears, everything it promises must answer.
      await host.waitFor(() => !!host.token, 'the login link')
      const health = await fetch(`${host.base}/health`)
      expect(health.status).to.equal(200)
      expect(await health.json()).to.deep.equal({ ok: true, ready: true })
      expect((await host.api('/')).status).to.equal(200)
      expect((await host.api('/api/console/sessions')).status).to.equal(200)
    } finally {
      await host.dispose()
    }
  })

  it('names the plugin that did not come up, never prints the link, and /health answers 503 {ready: false}', async () => {
    const config = await editedConfig((yaml) => yaml.replace(/\n    checks: \[\]\n/, '\n    checks: []\n    budgets: { maxAtempts: 3 }\n'))
    const host = await startHost(['--no-demo', '--config', config], { untilLink: false })
    try {
      await host.waitFor(() => host.output.includes('failed to start'), 'the failure report')
      expect(host.output, host.output).to.match(/recovery \(@taskward\/plugin-recovery\): CONFIG_INVALID: recovery config: budgets\.maxAtempts = 3 is invalid/)
      expect(host.output).to.include('CONFIG_INVALID')
      // Other plugins may still be loading when the failure is printed (pending): wait until they are up.
      let health: Response
      let body: any
      await host.waitFor(async () => {
        health = await fetch(`${host.base}/health`)
        body = await health.json()
        return body.pending?.length === 0
      }, 'every other plugin up')
      expect(health!.status).to.equal(503)
      expect(body).to.deep.equal({ ok: false, ready: false, failed: ['recovery'], pending: [] })
      await sleep(1000)
      expect(host.token, 'no login link while a plugin is down').to.equal(undefined)
    } finally {
      await host.dispose()
      await rm(config, { force: true })
    }
  })

  it('opens on the demo: a completed task whose repair proposal waits for the user', async () => {
    const host = await startHost([])
    try {
      await host.waitFor(() => host.output.includes('demo ready'), 'the demo')
      const { sessions } = await (await host.api('/api/console/sessions')).json() as { sessions: { id: string, task?: { phase: string } }[] }
      expect(sessions).to.have.length(1)
      expect(sessions[0].task?.phase).to.equal('complete')
      const repairs = await (await host.api(`/api/sessions/${sessions[0].id}/repairs`)).json() as { proposals: { status: string, sourceLabel: string }[] }
      expect(repairs.proposals.map((p) => [p.status, p.sourceLabel])).to.deep.equal([['pending', 'main agent']])
      expect((await stat(join(host.data, 'demo-workspace', 'src', 'cli.js'))).isFile()).to.equal(true)
    } finally {
      await host.dispose()
    }
  })

  it('prints no warning on a first start: the demo\'s stage verifications run while its agent writes on, and land', async () => {
    const host = await startHost([])
    try {
      await host.waitFor(() => host.output.includes('demo ready'), 'the demo')
      const { sessions } = await (await host.api('/api/console/sessions')).json() as { sessions: { id: string }[] }
      /** The recovery attempts of the demo session: its stage verifications (progress) and the completion's. */
      const attempts = async () => {
        const found: { agentClaim?: string, nodeId?: string }[] = []
        for (let from: number | undefined = 0; from !== undefined;) {
          const page = await (await host.api(`/api/sessions/${sessions[0].id}/events?from=${from}&limit=1000`)).json() as { events: SessionEvent[], next?: number }
          for (const event of page.events) {
            if (event.type === RECORD_EVENT_TYPE && event.data.namespace === RECOVERY_NAMESPACE && event.data.kind === 'attempt') found.push(event.data.payload)
          }
          from = page.next
        }
        return found
      }
      await host.waitFor(async () => (await attempts()).some((a) => a.agentClaim === 'progress' && a.nodeId), 'the first stage verification to be recorded')
      // The first screen of a newcomer: no warning, and no refusal logged by a background verification.
      expect(host.output, host.output).to.not.match(/^\[W\]/m)
      expect(host.output).to.not.match(/ARTIFACT_CHANGED/)
      expect(host.output).to.not.match(/^\[E\]/m)
    } finally {
      await host.dispose()
    }
  })

  it('saves the projection caches at Ctrl-C (the CLI ends the process after `exit`): the next start folds nothing', async () => {
    const host = await startHost([])
    let copy: string | undefined
    try {
      await host.waitFor(() => host.output.includes('demo ready'), 'the demo')
      const { sessions } = await (await host.api('/api/console/sessions')).json() as { sessions: { id: string }[] }
      // A supervisor record right before Ctrl-C, well inside the second the caches wait before saving.
      const off = await fetch(`${host.base}/api/sessions/${sessions[0].id}/input`, {
        method: 'POST', headers: { authorization: `Bearer ${host.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ text: '/task off' }),
      })
      expect(off.status, await off.clone().text()).to.equal(200)
      process.kill(-host.pid, 'SIGINT')
      await host.waitFor(() => host.output.includes('terminated by SIGINT'), 'the clean shutdown', 20_000)
      await Promise.race([host.exited, sleep(20_000)])
      // Read the store the stopped host left (a copy: dispose removes the data directory).
      copy = await mkdtemp(join(tmpdir(), 'taskward-start-copy-'))
      for (const name of ['taskward.db', 'taskward.db-wal']) {
        await writeFile(join(copy, name), await readFile(join(host.data, name))).catch(() => {})
      }
      const reader = await TestHost.boot({ dataDir: copy })
      try {
        const session = await reader.ctx.sessions.get(sessions[0].id)
        const rows = await reader.ctx.database.get('taskward_projection', { sessionId: session.id })
        const supervisor = rows.find((row) => row.key === SUPERVISOR_PROJECTION_KEY)
        expect(supervisor?.asOfSeq, JSON.stringify(rows.map((row) => [row.key, row.asOfSeq]))).to.equal(session.seq - 1)
      } finally {
        await reader.stop()
      }
    } finally {
      await host.dispose()
      if (copy) await rm(copy, { recursive: true, force: true })
    }
  })

  describe('--demo-only', () => {
    /** `npm start -- --demo-only` to its end: exit code and output. */
    async function demoOnly(extra: string[] = []) {
      const data = await mkdtemp(join(tmpdir(), 'taskward-demo-only-'))
      const port = await freePort()
      const child = spawn('npm', ['start', '--', '--demo-only', ...extra], {
        cwd: ROOT, env: { ...process.env, PORT: String(port), TASKWARD_DATA: data }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
      })
      let output = ''
      child.stdout.on('data', (chunk) => output += chunk)
      child.stderr.on('data', (chunk) => output += chunk)
      const code = await Promise.race([
        new Promise<number | null>((resolve) => child.on('exit', (exit) => resolve(exit))),
        sleep(240_000).then(() => 'timeout' as const),
      ])
      try { process.kill(-child.pid!, 'SIGKILL') } catch {}
      await rm(data, { recursive: true, force: true })
      return { code, output }
    }

    it('ends on its pending proposal every time, also with both cores busy (3 runs)', async function () {
      this.timeout(900_000)
      // Load: one busy process per core, for as long as the runs take (bounded by the test).
      const busy = [0, 1].map(() => spawn(process.execPath, ['-e', 'const end = Date.now() + 900000; while (Date.now() < end) {}'], { stdio: 'ignore' }))
      try {
        for (let run = 1; run <= 3; run++) {
          const { code, output } = await demoOnly()
          expect(code, `run ${run}:\n${output}`).to.equal(0)
          expect(output).to.match(/Demo ready: session [\w-]+, repair proposal [\w-]+ pending\./)
          expect(output).to.not.match(/demo failed/i)
          // Busy cores make the agent's writes and the stage verifications' copies race: still no warning.
          expect(output, `run ${run}:\n${output}`).to.not.match(/^\[W\]/m)
        }
      } finally {
        for (const child of busy) child.kill('SIGKILL')
      }
    })

    it('waits for a plugin of cordis.yml that loads late (recovery, 4 s): the task still gets its check and ends on its proposal', async function () {
      this.timeout(300_000)
      // A row whose package takes 4 s to import, as a slow disk or a busy machine makes it.
      const slow = join(ROOT, '.scratch', `slow-recovery-${process.pid}-${Date.now()}.mjs`)
      await mkdir(dirname(slow), { recursive: true })
      await writeFile(slow, "await new Promise((resolve) => setTimeout(resolve, 4000))\n"
        + "export * from '@taskward/plugin-recovery'\nexport { default } from '@taskward/plugin-recovery'\n")
      const config = await editedConfig((yaml) => yaml.replace("name: '@taskward/plugin-recovery'", `name: './${basename(slow)}'`))
      try {
        const { code, output } = await demoOnly(['--config', config])
        expect(code, output).to.equal(0)
        expect(output).to.match(/Demo ready: session [\w-]+, repair proposal [\w-]+ pending\./)
      } finally {
        await rm(config, { force: true })
        await rm(slow, { force: true })
      }
    })

    it('fails loudly with exit 1 when the demo cannot end on its proposal (no repair plugin)', async function () {
      this.timeout(300_000)
      const config = await editedConfig((yaml) => yaml.replace(/- id: repair\n  name: '@taskward\/plugin-repair'\n/, ''))
      try {
        const { code, output } = await demoOnly(['--config', config])
        expect(code, output).to.equal(1)
        expect(output).to.match(/\[E\] console demo failed: the demo task ended without its pending repair proposal/)
        expect(output).to.match(/Demo failed \(failed\): the demo task ended without its pending repair proposal/)
      } finally {
        await rm(config, { force: true })
      }
    })
  })
})

import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TcpProxy, freePort, mysqlTestConfig, skipWithoutMysql } from '@taskward/testkit'

/*
 * A store failure after the host is up never ends it: the requests it affects answer STORE_UNAVAILABLE
 * (503), /health says so, nothing is left unhandled, and the host serves again once the store is back
 * — a table prepared while the store was down included (minato's prepare would otherwise reject with
 * nobody awaiting it, and every later query of every table would fail on it). The host is the real
 * `npm start` (cordis CLI, cordis.yml) in its own process group; the stores are real: MariaDB behind a
 * TCP proxy this test stops and starts (and whose connections it kills with KILL), and the SQLite file
 * whose data directory is moved away and back.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const ROOT = join(import.meta.dirname, '..')

/** A plugin row of the test's cordis.yml: declares a table on request, after the host is up. */
const LATE_TABLE_PLUGIN = `
export const name = 'late-table'
export const inject = ['connection', 'model', 'database']
export function apply(ctx) {
  ctx.connection.register({ path: '/test/late-table/:name', methods: ['POST'], access: 'public', handler: async (_request, { params }) => {
    ctx.model.extend(params.name, { id: 'unsigned', note: 'string' }, { autoInc: true })
    return Response.json({ declared: params.name })
  } })
  ctx.connection.register({ path: '/test/late-table/:name', methods: ['GET'], access: 'public', handler: async (_request, { params }) => {
    await ctx.database.create(params.name, { note: 'written' })
    return Response.json({ rows: (await ctx.database.get(params.name, {})).length })
  } })
}
`

/** `npm start` on `config` and a temp data directory, in its own process group, until it serves. */
async function startHost(config: string, data: string) {
  const port = await freePort()
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'start.mjs'), '--config', config, '--no-demo'], {
    cwd: ROOT, env: { ...process.env, PORT: String(port), TASKWARD_DATA: data }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  })
  let output = ''
  child.stdout.on('data', (chunk) => output += chunk)
  child.stderr.on('data', (chunk) => output += chunk)
  let exitCode: number | null | undefined
  child.on('exit', (code) => exitCode = code ?? -1)
  const base = `http://127.0.0.1:${port}`
  const host = {
    base, data,
    get output() { return output },
    get exited() { return exitCode !== undefined },
    get token() { return /\/login\?token=([\w-]+)/.exec(output)?.[1] },
    async waitFor(check: () => boolean | Promise<boolean>, what: string, timeout = 60_000) {
      const deadline = Date.now() + timeout
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${output}`)
        await sleep(200)
      }
    },
    async request(method: string, path: string, body?: unknown) {
      const response = await fetch(base + path, {
        method, headers: { authorization: `Bearer ${host.token}`, 'content-type': 'application/json' }, ...body !== undefined ? { body: JSON.stringify(body) } : {},
      })
      return { status: response.status, body: await response.json().catch(() => undefined) as any }
    },
    async stop() {
      try { process.kill(-child.pid!, 'SIGKILL') } catch {}
      await sleep(300)
    },
  }
  await host.waitFor(async () => !!host.token && (await fetch(`${base}/health`).catch(() => undefined))?.ok === true, 'the host to serve')
  return host
}

/** A copy of cordis.yml in the checkout (so its packages resolve) with `database` replaced and the late-table row added. */
async function testConfig(database: string) {
  const dir = join(ROOT, '.scratch')
  await mkdir(dir, { recursive: true })
  const stamp = `${process.pid}-${Date.now()}`
  const plugin = join(dir, `late-table-${stamp}.mjs`)
  await writeFile(plugin, LATE_TABLE_PLUGIN)
  const yaml = await readFile(join(ROOT, 'cordis.yml'), 'utf8')
  expect(yaml).to.include('    driver: sqlite\n    path: taskward.db\n')
  const edited = yaml.replace('    driver: sqlite\n    path: taskward.db\n', database)
  const config = join(dir, `cordis-outage-${stamp}.yml`)
  await writeFile(config, `${edited}- id: late-table\n  name: './late-table-${stamp}.mjs'\n`)
  return { config, plugin }
}

/** What the host's log must never show: an unhandled rejection (the cordis worker logs it as `app`), an exit. */
function expectNothingUnhandled(output: string) {
  expect(output, output).to.not.match(/^\[W\] app /m)
  expect(output).to.not.match(/unhandled/i)
  expect(output).to.not.match(/terminated|exited with code/)
}

async function expectStoreUnavailable(answer: { status: number, body: any }, what: string) {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).to.equal(503)
  expect(answer.body?.code, what).to.equal('STORE_UNAVAILABLE')
}

describe('a store failure after start (the host stays up, coded, and serves again)', function () {
  this.timeout(240_000)

  describe('MySQL/MariaDB: connections killed, then the server unreachable', () => {
    const url = process.env.TASKWARD_TEST_MYSQL
    let proxy: TcpProxy | undefined
    let host: Awaited<ReturnType<typeof startHost>> | undefined
    let files: { config: string, plugin: string } | undefined
    const lateTable = `taskward_late_${process.pid}_${Date.now()}`

    before(function () { skipWithoutMysql(this) })
    after(async () => {
      await host?.stop()
      await proxy?.down()
      if (files) for (const file of Object.values(files)) await rm(file, { force: true })
      if (host) await rm(host.data, { recursive: true, force: true })
      if (url) await directQuery(url, `DROP TABLE IF EXISTS \`${lateTable}\``).catch(() => {})
    })

    it('answers STORE_UNAVAILABLE while the server is gone, /health says so, and everything works again once it is back', async () => {
      const store = mysqlTestConfig(url!)
      proxy = new TcpProxy(await freePort(), { host: store.host, port: store.port })
      await proxy.up()
      files = await testConfig(`    driver: mysql\n    host: 127.0.0.1\n    port: ${proxy.port}\n    user: ${store.user}\n    password: ${store.password}\n    database: ${store.database}\n`)
      host = await startHost(files.config, await mkdtemp(join(tmpdir(), 'taskward-outage-')))
      await mkdir(join(host.data, 'workspaces', 'w'), { recursive: true })
      const created = await host.request('POST', '/api/sessions', { cwd: join(host.data, 'workspaces', 'w') })
      expect(created.status, JSON.stringify(created.body)).to.equal(201)
      const sessionId = created.body.session.id
      const status = () => host!.request('POST', `/api/sessions/${sessionId}/input`, { text: '/task status' })
      expect((await status()).status).to.equal(200)

      // The server kills every connection the host has (KILL, as an operator or a failover does).
      const killed = await directQuery(url!, 'SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE USER = ?', [store.user])
        .then((rows: any[]) => rows.filter((row) => proxy!.upstreamPorts.has(Number(String(row.HOST).split(':').pop()))))
      expect(killed.length, 'the host holds connections through the proxy').to.be.greaterThan(0)
      for (const row of killed) await directQuery(url!, `KILL ${Number(row.ID)}`)
      // The pool makes new connections: within a few requests every one succeeds again.
      await host.waitFor(async () => (await status()).status === 200, 'requests to succeed after KILL', 20_000)

      // The server becomes unreachable.
      await proxy.down()
      await expectStoreUnavailable(await host.request('GET', '/health'), '/health')
      await expectStoreUnavailable(await host.request('POST', `/api/sessions/${sessionId}/input`, { text: '/task new write the answer' }), 'a command that appends')
      await expectStoreUnavailable(await host.request('GET', `/api/sessions/${sessionId}/events`), 'reading the log')
      // A chat message starts an agent turn in the background: its appends fail there, not unhandled.
      const chat = await host.request('POST', `/api/sessions/${sessionId}/input`, { text: 'hello while the store is down' })
      expect([200, 202, 503], JSON.stringify(chat.body)).to.include(chat.status)
      if (chat.status === 503) expect(chat.body.code).to.equal('STORE_UNAVAILABLE')
      // A table declared while the server is gone: its prepare fails after ready.
      expect((await host.request('POST', `/test/late-table/${lateTable}`)).status).to.equal(200)
      await sleep(500)
      await expectStoreUnavailable(await host.request('GET', `/test/late-table/${lateTable}`), 'a query of the table that could not be prepared')
      await sleep(1500)
      expect(host.exited, host.output).to.equal(false)

      // The server is back: the host serves again, the late table is prepared, nothing was left unhandled.
      await proxy.up()
      await host.waitFor(async () => (await fetch(`${host!.base}/health`)).status === 200, '/health to answer 200 again', 30_000)
      const appended = await host.request('POST', `/api/sessions/${sessionId}/input`, { text: '/task new write the answer' })
      expect(appended.status, JSON.stringify(appended.body)).to.equal(200)
      expect((await host.request('GET', `/api/sessions/${sessionId}/events`)).status).to.equal(200)
      const late = await host.request('GET', `/test/late-table/${lateTable}`)
      expect(late.status, JSON.stringify(late.body)).to.equal(200)
      expect(late.body.rows).to.equal(1)
      expectNothingUnhandled(host.output)
      // One line per outage, not one per poll or statement (the repair relay polls ten times a second).
      const warnings = host.output.split('\n').filter((line) => line.startsWith('[W]'))
      expect(warnings.length, warnings.join('\n')).to.be.lessThan(12)
      expect(host.exited).to.equal(false)
    })
  })

  describe('SQLite: the data directory moved away while the host runs, then back', () => {
    let host: Awaited<ReturnType<typeof startHost>> | undefined
    let files: { config: string, plugin: string } | undefined
    after(async () => {
      await host?.stop()
      if (files) for (const file of Object.values(files)) await rm(file, { force: true })
      if (host) {
        await rm(host.data, { recursive: true, force: true })
        await rm(`${host.data}.moved`, { recursive: true, force: true })
      }
    })

    it('refuses writes STORE_UNAVAILABLE while the file is not at its path, /health says so, and serves again once it is back', async () => {
      files = await testConfig('    driver: sqlite\n    path: taskward.db\n')
      host = await startHost(files.config, await mkdtemp(join(tmpdir(), 'taskward-outage-')))
      await mkdir(join(host.data, 'workspaces', 'w'), { recursive: true })
      const created = await host.request('POST', '/api/sessions', { cwd: join(host.data, 'workspaces', 'w') })
      expect(created.status, JSON.stringify(created.body)).to.equal(201)
      const sessionId = created.body.session.id

      await rename(host.data, `${host.data}.moved`)
      const health = await host.request('GET', '/health')
      await expectStoreUnavailable(health, '/health')
      expect(health.body.error).to.match(/removed or moved/)
      await expectStoreUnavailable(await host.request('POST', `/api/sessions/${sessionId}/input`, { text: '/task new write the answer' }), 'a command that appends')
      // A table declared meanwhile: its CREATE is refused (the store refuses writes), after ready.
      const lateTable = `taskward_late_${process.pid}`
      expect((await host.request('POST', `/test/late-table/${lateTable}`)).status).to.equal(200)
      await sleep(500)
      await expectStoreUnavailable(await host.request('GET', `/test/late-table/${lateTable}`), 'a query of the table that could not be prepared')
      await sleep(1000)
      expect(host.exited, host.output).to.equal(false)

      await rename(`${host.data}.moved`, host.data)
      await host.waitFor(async () => (await fetch(`${host!.base}/health`)).status === 200, '/health to answer 200 again', 20_000)
      const appended = await host.request('POST', `/api/sessions/${sessionId}/input`, { text: '/task new write the answer' })
      expect(appended.status, JSON.stringify(appended.body)).to.equal(200)
      const late = await host.request('GET', `/test/late-table/${lateTable}`)
      expect(late.status, JSON.stringify(late.body)).to.equal(200)
      expect(late.body.rows).to.equal(1)
      expectNothingUnhandled(host.output)
      expect(host.exited).to.equal(false)
    })
  })
})

/** One statement on the test server over a connection of its own (not the host's). */
async function directQuery(url: string, sql: string, values: unknown[] = []): Promise<any> {
  // The client the MySQL driver uses (no type declarations: imported by a name TypeScript does not resolve).
  const client = '@vlasky/mysql'
  const { createConnection: connect } = await import(client) as any
  const config = mysqlTestConfig(url)
  const connection = connect({ host: config.host, port: config.port, user: config.user, password: config.password, database: config.database })
  try {
    return await new Promise((resolve, reject) => connection.query(sql, values, (error: any, rows: any) => error ? reject(error) : resolve(rows)))
  } finally {
    connection.destroy()
  }
}

import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { freePort } from '@taskward/testkit'
import { hostProcess } from '../plugins/database/tests/store-processes'

const ROOT = join(import.meta.dirname, '..')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `npm start -- --no-demo …` on `data`, in its own process group; `until` ends the wait early. */
async function npmStart(data: string, args: string[] = [], until?: (output: string) => boolean, port?: number) {
  const child = spawn('npm', ['start', '--', '--no-demo', ...args], {
    cwd: ROOT, env: { ...process.env, PORT: String(port ?? await freePort()), TASKWARD_DATA: data }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  })
  let output = ''
  child.stdout.on('data', (chunk) => output += chunk)
  child.stderr.on('data', (chunk) => output += chunk)
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const deadline = Date.now() + 120_000
  let code: number | null | 'running' = 'running'
  exited.then((exit) => code = exit)
  while (code === 'running' && !until?.(output) && Date.now() < deadline) await sleep(200)
  try { process.kill(-child.pid!, 'SIGKILL') } catch {}
  await Promise.race([exited, sleep(5000)])
  return { code, output }
}

/** The refusal is one log line that starts with its code, and the log holds no stack frame and no class name. */
function expectCodedLine(output: string, code: string, message: RegExp) {
  const lines = output.split('\n').filter((line) => line.includes(`${code}: `) && !line.startsWith('  - '))
  expect(lines.length, output).to.be.greaterThan(0)
  expect(lines[0], output).to.match(new RegExp(`^\\[E\\] app ${code}: `))
  expect(lines[0]).to.match(message)
  expect(output, 'no stack trace for a refusal').to.not.match(/^\s+at /m)
  expect(output).to.not.include('TaskwardError')
}

describe('npm start: a refused start logs its code, not a stack', function () {
  this.timeout(300_000)
  let data: string
  beforeEach(async () => { data = await mkdtemp(join(tmpdir(), 'taskward-refusal-')) })
  afterEach(async () => { await rm(data, { recursive: true, force: true }) })

  it('a damaged database: one STORE_CORRUPT line saying to restore a backup, exit 52', async () => {
    await writeFile(join(data, 'taskward.db'), Buffer.alloc(4096, 7))
    const { code, output } = await npmStart(data)
    expect(code, output).to.equal(52)
    expectCodedLine(output, 'STORE_CORRUPT', /The database file .*taskward\.db is damaged: .*restore the newest backup/)
    // Logged once: not again without its code by the driver.
    expect(output.match(/is damaged/g)).to.have.length(1)
  })

  it('a second host on the data directory: one STORE_LOCKED line naming the holder, exit 52', async () => {
    const first = hostProcess(data, 'main', 'hold')
    try {
      const [, pid] = await first.waitFor(/ready (\d+)/)
      const { code, output } = await npmStart(data)
      expect(code, output).to.equal(52)
      expectCodedLine(output, 'STORE_LOCKED', new RegExp(`is in use by another Taskward host \\(pid ${pid}, `))
      expect(output.match(/is in use by another Taskward host/g)).to.have.length(1)
    } finally {
      first.child.kill('SIGKILL')
      await first.exited
    }
  })

  it('MySQL/MariaDB that does not answer: one STORE_UNAVAILABLE line naming the server, exit 52 (not a hang)', async () => {
    const closed = await freePort()
    const config = join(ROOT, '.scratch', `cordis-mysql-down-${process.pid}-${Date.now()}.yml`)
    await mkdir(dirname(config), { recursive: true })
    const yaml = (await readFile(join(ROOT, 'cordis.yml'), 'utf8'))
      .replace('    driver: sqlite\n    path: taskward.db\n', `    driver: mysql\n    host: 127.0.0.1\n    port: ${closed}\n    user: taskward\n    password: not-printed-4711\n    database: taskward\n`)
    expect(yaml).to.include(`port: ${closed}`)
    await writeFile(config, yaml)
    try {
      const { code, output } = await npmStart(data, ['--config', config])
      expect(code, output).to.equal(52)
      expectCodedLine(output, 'STORE_UNAVAILABLE', new RegExp(`MySQL/MariaDB at 127\\.0\\.0\\.1:${closed} \\(database taskward\\) did not let the host start: .*ECONNREFUSED.*Start the server`))
      expect(output).to.not.include('not-printed-4711')
    } finally {
      await rm(config, { force: true })
    }
  })

  it('a port that is not 1-65535 (0, text, too large): one CONFIG_INVALID line saying what to give, exit 2, nothing started', async () => {
    for (const port of ['0', 'http', '70000']) {
      const child = spawn(process.execPath, [join(ROOT, 'scripts', 'start.mjs'), '--no-demo', '--port', port], {
        cwd: ROOT, env: { ...process.env, TASKWARD_DATA: data }, stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stdout.on('data', (chunk) => output += chunk)
      child.stderr.on('data', (chunk) => output += chunk)
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
      expect(code, output).to.equal(2)
      expect(output.trim()).to.equal(`CONFIG_INVALID: the port "${port}" (--port or PORT) is not a port number from 1 to 65535. Give one, e.g. npm start -- --port 5140.`)
    }
  })

  it('the port is taken by another program: a line naming the port and what to do, exit 1 (never 0)', async () => {
    const port = await freePort()
    const other = createServer()
    await new Promise<void>((resolve) => other.listen(port, '127.0.0.1', resolve))
    try {
      const { code, output } = await npmStart(data, [], undefined, port)
      expect(code, output).to.equal(1)
      expect(output).to.include(`The host ended during its start: port ${port} on 127.0.0.1 is in use by another program, so the server could not listen. Stop that program, or start on another port: npm start -- --port N.`)
    } finally {
      await new Promise((resolve) => other.close(resolve))
    }
  })

  it('an invalid config is logged as CONFIG_INVALID lines; a plugin that throws a plain Error (a bug) keeps its stack', async () => {
    const dir = join(ROOT, '.scratch')
    await mkdir(dir, { recursive: true })
    const broken = join(dir, `broken-${process.pid}-${Date.now()}.mjs`)
    await writeFile(broken, "export const name = 'broken'\nexport function apply() { throw new Error('a bug in a plugin') }\n")
    const config = join(dir, `cordis-refusals-${process.pid}-${Date.now()}.yml`)
    const yaml = (await readFile(join(ROOT, 'cordis.yml'), 'utf8')).replace(/\n    checks: \[\]\n/, '\n    checks: []\n    budgets: { maxAtempts: 3 }\n')
    await writeFile(config, `${yaml}- id: broken\n  name: './${basename(broken)}'\n`)
    try {
      const { output } = await npmStart(data, ['--config', config], (text) => text.includes('failed to start') && text.includes('a bug in a plugin'))
      const coded = output.split('\n').filter((line) => line.startsWith('[E] app CONFIG_INVALID: '))
      expect(coded[0], output).to.match(/^\[E\] app CONFIG_INVALID: recovery config: budgets\.maxAtempts = 3 is invalid/)
      expect(output).to.not.include('TaskwardError')
      // The frames printed belong to the bug alone, right below its message.
      const lines = output.split('\n')
      const at = lines.findIndex((line) => line.startsWith('[E] app Error: a bug in a plugin'))
      expect(at, output).to.be.greaterThan(-1)
      let end = at + 1
      while (end < lines.length && /^\s+at /.test(lines[end])) end++
      expect(end - at - 1, 'the bug\'s stack').to.be.greaterThan(0)
      expect([...lines.slice(0, at), ...lines.slice(end)].filter((line) => /^\s+at /.test(line)), 'frames of a refusal').to.deep.equal([])
    } finally {
      await rm(config, { force: true })
      await rm(broken, { force: true })
    }
  })
})

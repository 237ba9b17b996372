import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort, OpenAIMock } from '@taskward/testkit'
// @ts-expect-error plain ESM script without types
import { checkCache, dshDir, dshPaths, installDsh } from '../../scripts/dsh/install.mjs'
// @ts-expect-error plain ESM script without types
import { packDsh } from '../../scripts/dsh/pack.mjs'

const run = promisify(execFile)

/** For scripts run under the cached Node 24 (zstd is in its zlib): `file`, the log of session argv[2] under argv[1]. */
const FIND_LOG = `
  const fs = require('node:fs'), zlib = require('node:zlib'), path = require('node:path')
  const [root, id] = process.argv.slice(1)
  const find = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? (e.name === id ? [path.join(dir, e.name, 'session.jsonl.zstd')] : find(path.join(dir, e.name))) : [])
  const file = find(root)[0]
  if (!file) throw new Error('no log of ' + id)
`

/*
 * Real DSH for tests: the cached install (scripts/dsh/install.mjs), a temporary DSH_HOME per instance,
 * `dsh web --no-open --port N` as a child process against a loopback model endpoint, and DSH's own
 * HTTP API. In CI a missing cache is installed (10-20 min, once per machine); locally it skips.
 */

/**
 * The `recovery` part of a row config whose one check always passes: recovery is loaded in DSH as on
 * our host, and without checks a task never completes (VALIDATION_MISSING).
 */
export const PASSING_RECOVERY = { recovery: { checks: [{ id: 'always', argv: ['true'], timeoutMs: 20_000 }] } }

export interface DshPaths { dir: string, node: string, nodeBin: string, pnpmBin: string, dsh: string }

/** The cached install, or why the suite cannot run (installing it first when CI is set). */
export async function dshInstall(): Promise<{ paths?: DshPaths, skip?: string }> {
  let why = checkCache()
  if (why && process.env.CI) {
    await installDsh()
    why = checkCache()
  }
  if (why) return { skip: `DSH is not installed in ${dshDir()} (${why}); run \`node scripts/dsh/install.mjs\` (10-20 min) or set CI=1` }
  return { paths: dshPaths() }
}

let packed: Promise<string> | undefined
/** `npm run pack:dsh`, once per test run. */
export function packedBundle(): Promise<string> {
  packed ??= packDsh({ log: () => {} }) as Promise<string>
  return packed!
}

export class DshHome {
  /** Every `dsh web` started on this home (restarts included): `dispose` stops those still running. */
  private readonly started = new Set<DshWeb>()

  private constructor(readonly paths: DshPaths, readonly home: string, readonly env: NodeJS.ProcessEnv) {}

  static async create(paths: DshPaths, model: { baseURL: string }): Promise<DshHome> {
    const home = await mkdtemp(join(tmpdir(), 'taskward-dsh-home-'))
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${paths.nodeBin}:${paths.pnpmBin}:${process.env.PATH}`,
      DSH_HOME: home,
      DSH_TELEMETRY_DISABLED: '1',
      DEEPSEEK_BASE_URL: model.baseURL,
      DEEPSEEK_API_KEY: 'taskward-test-key',
      NODE_OPTIONS: '',
    }
    // pnpm 11 (run by `dsh plugin add`) reads pnpm_config_registry, not npm_config_registry.
    if (process.env.npm_config_registry && !process.env.pnpm_config_registry) env.pnpm_config_registry = process.env.npm_config_registry
    return new DshHome(paths, home, env)
  }

  /** `dsh <args>` under this home; resolves with its output. */
  async dsh(args: string[], timeoutMs = 120_000) {
    return run(this.paths.node, [this.paths.dsh, ...args], { env: this.env, cwd: this.home, timeout: timeoutMs, maxBuffer: 16 << 20 })
  }

  /** Set the `taskward` row's config in the web profile's own patch layer (read at the next start). */
  async configureTaskward(config: Record<string, unknown>) {
    const profile = join(this.home, 'profiles', 'web')
    await mkdir(profile, { recursive: true })
    // JSON is YAML: DSH's list format, one patch entry.
    await writeFile(join(profile, 'cordis.patch.yml'), JSON.stringify([{ id: 'taskward', config }], null, 2) + '\n')
  }

  addBundle(tarball: string) {
    return this.dsh(['plugin', '--profile', 'web', 'add', tarball], 300_000)
  }

  /** `dsh plugin --profile web add <spec>` of another package (a test-only plugin: `link:<dir>`). */
  addPlugin(spec: string) {
    return this.dsh(['plugin', '--profile', 'web', 'add', spec], 300_000)
  }

  removeBundle(name = 'taskward-dsh') {
    return this.dsh(['plugin', '--profile', 'web', 'remove', name], 300_000)
  }

  /**
   * Append `events` (seq and time filled in) to a stopped DSH's log of `sessionId`, as a hostile or
   * buggy writer could: DSH keeps sessions as zstd JSONL (a header frame, then frames of one event a
   * line). Runs
   * under the cached Node 24 (zstd is in its zlib).
   */
  async appendToLog(sessionId: string, events: { type: string, data: unknown }[]) {
    const script = `
      const fs = require('node:fs'), zlib = require('node:zlib'), path = require('node:path')
      const [root, id, raw] = process.argv.slice(1)
      const find = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? (e.name === id ? [path.join(dir, e.name, 'session.jsonl.zstd')] : find(path.join(dir, e.name))) : [])
      const file = find(root)[0]
      const lines = zlib.zstdDecompressSync(fs.readFileSync(file)).toString('utf8').split('\\n').filter(Boolean)
      let seq = JSON.parse(lines[lines.length - 1]).seq + 1
      for (const event of JSON.parse(raw)) lines.push(JSON.stringify({ type: event.type, seq: seq++, time: Date.now(), data: event.data }))
      // DSH's framing: the header alone in the first zstd frame, events in the frames after it.
      const frame = (text) => zlib.zstdCompressSync(Buffer.from(text))
      fs.writeFileSync(file, Buffer.concat([frame(lines[0] + '\\n'), frame(lines.slice(1).join('\\n') + '\\n')]))
    `
    await run(this.paths.node, ['-e', script, join(this.home, 'sessions'), sessionId, JSON.stringify(events)], { env: this.env })
  }

  /**
   * The lines of a stopped DSH's log of `sessionId` (the header first, then one event a line), and a way
   * to write back a kept prefix of them, as a crash that cut a flush would leave it (DSH keeps the whole
   * lines of a torn final frame, `readZstdPrefix` of dsh-session-persistence-jsonl).
   */
  async readLog(sessionId: string): Promise<string[]> {
    const { stdout } = await run(this.paths.node, ['-e', `${FIND_LOG}
      process.stdout.write(JSON.stringify(zlib.zstdDecompressSync(fs.readFileSync(file)).toString('utf8').split('\\n').filter(Boolean)))
    `, join(this.home, 'sessions'), sessionId], { env: this.env, maxBuffer: 64 << 20 })
    return JSON.parse(stdout)
  }

  /** Replace a stopped DSH's log of `sessionId` by `lines` (header first), in DSH's framing. */
  async writeLog(sessionId: string, lines: string[]) {
    const input = join(this.home, `log-${sessionId}.json`)
    await writeFile(input, JSON.stringify(lines))
    await run(this.paths.node, ['-e', `${FIND_LOG}
      const lines = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'))
      const frame = (text) => zlib.zstdCompressSync(Buffer.from(text))
      fs.writeFileSync(file, Buffer.concat([frame(lines[0] + '\\n'), frame(lines.slice(1).join('\\n') + '\\n')]))
    `, join(this.home, 'sessions'), sessionId, input], { env: this.env })
    await rm(input)
  }

  /** Start `dsh web`; resolves once DSH's API answers (and, unless `taskward: false`, Taskward's route). */
  async start(options: { taskward?: boolean } = {}): Promise<DshWeb> {
    const port = await freePort()
    const web = new DshWeb(this, port)
    this.started.add(web)
    await web.start(90_000, options.taskward ?? true)
    return web
  }

  async dispose() {
    for (const web of this.started) await web.stop()
    await rm(this.home, { recursive: true, force: true })
  }
}

export interface DshSuiteOptions {
  /** What the loopback endpoint answers (the played agent and reviewers): `model.fallback`. */
  player: OpenAIMock['fallback']
  /** Prefix of the temporary workspace directory's name. */
  workspace: string
  /** The `taskward` row's config (configureTaskward); absent: the bundle's own. */
  config?: Record<string, unknown>
  /** More `dsh plugin --profile web add` specs after the bundle (a test-only plugin: `link:<dir>`). */
  plugins?: string[]
  /** Runs once the workspace exists, before DSH starts (files a check reads, …). */
  prepare?: (workspace: string) => Promise<void>
  /** false: the suite starts DSH itself (`home.start()`). */
  start?: boolean
}

export interface DshSuite {
  model: OpenAIMock
  home: DshHome
  workspace: string
  web: DshWeb
}

/**
 * One real DSH for a `describe`: the cached install (skipping the suite, and saying why, without it),
 * a loopback model endpoint playing `player`, a temporary DSH_HOME with the freshly packed bundle
 * (and `plugins`) added, the row's `config`, a temporary workspace, and `dsh web` started. `set`
 * receives the parts once they exist; after the suite every DSH started on the home is stopped and
 * everything is removed.
 */
export function useDsh(options: DshSuiteOptions & { start: false }, set: (suite: Omit<DshSuite, 'web'>) => void): void
export function useDsh(options: DshSuiteOptions, set: (suite: DshSuite) => void): void
export function useDsh(options: DshSuiteOptions, set: (suite: any) => void): void {
  let model: OpenAIMock | undefined
  let home: DshHome | undefined
  let workspace: string | undefined
  before(async function () {
    const found = await dshInstall()
    if (!found.paths) {
      console.log(`      skipped: ${found.skip}`)
      return this.skip()
    }
    model = await OpenAIMock.start()
    model.fallback = options.player
    home = await DshHome.create(found.paths, { baseURL: `http://127.0.0.1:${model.port}` })
    workspace = await mkdtemp(join(tmpdir(), `taskward-dsh-${options.workspace}-`))
    await options.prepare?.(workspace)
    await home.addBundle(await packedBundle())
    for (const spec of options.plugins ?? []) await home.addPlugin(spec)
    if (options.config) await home.configureTaskward(options.config)
    const web = options.start === false ? undefined : await home.start()
    set({ model, home, workspace, ...(web ? { web } : {}) })
  })
  after(async () => {
    await home?.dispose()
    await model?.close()
    if (workspace) await rm(workspace, { recursive: true, force: true })
  })
}

export class DshWeb {
  process!: ChildProcess
  output = ''
  private exited?: Promise<number | null>

  constructor(readonly home: DshHome, readonly port: number) {}

  get origin() { return `http://127.0.0.1:${this.port}` }

  async start(timeoutMs = 90_000, taskward = true) {
    const child = spawn(this.home.paths.node, [this.home.paths.dsh, 'web', '--no-open', '--port', String(this.port)], {
      env: this.home.env, cwd: this.home.home, stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.process = child
    child.stdout!.on('data', (chunk) => { this.output += chunk })
    child.stderr!.on('data', (chunk) => { this.output += chunk })
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (child.exitCode !== null) throw new Error(`dsh web exited with ${child.exitCode} before listening:\n${this.output.slice(-4000)}`)
      try {
        if (!taskward && await this.api('session.list', {}).then(() => true, () => false)) return
        const response = await fetch(`${this.origin}/taskward/health`)
        if (taskward && response.ok) {
          const body: any = await response.json().catch(() => undefined)
          // Taskward's route can answer before DSH's own API is mounted: wait for that too.
          if (body?.taskward && await this.api('session.list', {}).then(() => true, () => false)) return
        }
      } catch {}
      if (Date.now() > deadline) {
        // Never leave a DSH behind: the caller gets no handle to stop it.
        await this.stop()
        throw new Error(`dsh web did not answer within ${timeoutMs} ms:\n${this.output.slice(-4000)}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }

  /** Wait until DSH answers at all (with or without Taskward loaded). */
  async waitListening(timeoutMs = 90_000) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      try {
        const response = await fetch(`${this.origin}/`)
        if (response.status) return
      } catch {}
      if (this.process.exitCode !== null) throw new Error(`dsh web exited with ${this.process.exitCode}:\n${this.output.slice(-4000)}`)
      if (Date.now() > deadline) throw new Error(`dsh web did not listen within ${timeoutMs} ms:\n${this.output.slice(-4000)}`)
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }

  /** One call of DSH's HTTP API: `POST /api/<method>` with its client-request envelope. */
  async api<T = any>(method: string, payload: unknown): Promise<T> {
    const response = await fetch(`${this.origin}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: this.origin },
      body: JSON.stringify({ type: 'client-request', rpcId: `r${Math.random().toString(36).slice(2)}`, method, payload }),
    })
    const text = await response.text()
    let body: any
    try { body = JSON.parse(text) } catch { throw new Error(`${method}: ${response.status} ${text.slice(0, 500)}`) }
    // `{type: 'server-response', rpcId, result: {ok, value} | {ok: false, error}}`
    if (!response.ok || body?.result?.ok !== true) throw new Error(`${method}: ${response.status} ${text.slice(0, 2000)}`)
    return body.result.value as T
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM') {
    if (!this.process || this.process.exitCode !== null) return
    this.process.kill(signal)
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 15_000)
    await this.exited
    clearTimeout(timer)
  }
}

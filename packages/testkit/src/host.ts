import { Context, Logger } from 'cordis'
import Server from '@cordisjs/plugin-server'
import * as Database from '@taskward/plugin-database'
import * as Host from '@taskward/host'
import type { ScriptedModel } from '@taskward/host'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './ports'
import { HttpClient } from './http'
import { removeTree } from './workspace'
import { resolvePlugins, type PluginEntry, type ResolvedPlugin } from './plugins'

const LOG_LEVELS: Record<string, number> = { silent: 0, error: 1, info: 2, warn: 2, debug: 3 }

/**
 * Test hosts log errors only, so that `[I] server listening` lines do not bury test output.
 * `TASKWARD_LOG_LEVEL` (silent | error | info | debug, or 0–3) brings the rest back when debugging.
 */
function applyLogLevel(env: NodeJS.ProcessEnv = process.env) {
  const wanted = env.TASKWARD_LOG_LEVEL?.trim().toLowerCase()
  const level = !wanted ? LOG_LEVELS.error : /^\d+$/.test(wanted) ? Number(wanted) : LOG_LEVELS[wanted]
  if (level === undefined) throw new Error(`TASKWARD_LOG_LEVEL="${wanted}" is not a level; use silent, error, info, debug or 0-3.`)
  Logger.levels.base = level
}

/** Default of `BootOptions.timeout`. */
export const BOOT_TIMEOUT_MS = 10_000

const KERNEL_SERVICES = ['database', 'server', 'sessions', 'projections', 'tools', 'models', 'agents', 'commands', 'connection']

export interface BootOptions {
  /**
   * Plugins to load after the host kernel, in order: short names (`'supervisor'`, `'repair'`, …) with
   * their defaults, plugins, or `[nameOrPlugin, config]`. The services of short-named plugins are waited for.
   */
  plugins?: PluginEntry[]
  /** Host kernel config (agents, connection). */
  host?: { [K in keyof Host.Config]?: Partial<Host.Config[K]> }
  /** Services to wait for besides the kernel's and the short-named plugins' (e.g. your plugin's). */
  waitFor?: string[]
  /**
   * How long `boot`/`start` waits for the server and every service in `waitFor` (default
   * `BOOT_TIMEOUT_MS`, 10 s). On timeout the host is stopped and boot rejects naming the missing services
   * (usually a plugin whose dependency was not loaded).
   */
  timeout?: number
  /** Reuse a data directory (e.g. to restart a host that a child process wrote). */
  dataDir?: string
  /** The database plugin's config; default: SQLite in the data directory. */
  database?: Partial<Database.Config>
}

/**
 * A real host for tests: a temp SQLite file through minato, a real HTTP server on a loopback port,
 * the kernel services and the chosen plugins. `restart()` stops everything and starts again on the
 * same files and port.
 */
export class TestHost {
  ctx!: Context
  port!: number
  http!: HttpClient
  readonly dbPath: string
  private stopped = true
  /** Errors cordis reported while loading plugins (e.g. a CONFIG_INVALID that kept one from starting). */
  readonly errors: unknown[] = []
  private serverFork?: { dispose(): unknown }
  private plugins?: ResolvedPlugin[]

  private constructor(readonly dataDir: string, private options: BootOptions, private ownsDir: boolean) {
    this.dbPath = join(dataDir, 'taskward.db')
  }

  static async boot(options: BootOptions = {}) {
    const dataDir = options.dataDir ?? await mkdtemp(join(tmpdir(), 'taskward-host-'))
    const host = new TestHost(dataDir, options, !options.dataDir)
    host.port = await freePort()
    try {
      await host.start()
    } catch (error) {
      if (host.ownsDir) await removeTree(dataDir)
      throw error
    }
    return host
  }

  get url() {
    return `http://127.0.0.1:${this.port}`
  }

  get scripted(): ScriptedModel {
    return this.ctx.models.scripted
  }

  get operatorToken() {
    return this.ctx.connection.tokens.operatorToken
  }

  /** Start (again) on the same data directory and port. */
  async start() {
    applyLogLevel()
    this.plugins ??= await resolvePlugins(this.options.plugins ?? [])
    const ctx = new Context()
    this.errors.length = 0
    ctx.on('internal/error', (error: unknown) => { this.errors.push(error) })
    this.serverFork = ctx.plugin(Server, { host: '127.0.0.1', port: this.port })
    ctx.plugin(Database, this.options.database ?? { driver: 'sqlite', path: this.dbPath })
    // Workspace roots default to the test's own data directory, never ./data of the checkout.
    const host: Record<string, any> = { ...(this.options.host ?? {}) }
    host.operator = { workspaceRoots: [join(this.dataDir, 'workspaces')], ...(host.operator ?? {}) }
    ctx.plugin(Host, host as Host.Config)
    for (const { plugin, config } of this.plugins) ctx.plugin(plugin, config)
    const services = this.plugins.map((p) => p.service).filter((s): s is string => !!s)
    const wanted = [...new Set([...KERNEL_SERVICES, ...services, ...(this.options.waitFor ?? [])])]
    const up = new Set<string>()
    const ready = Promise.all(wanted.map((name) => new Promise<void>((resolve) => ctx.inject([name], () => {
      up.add(name)
      resolve()
    }))))
    let listening = false
    const serving = new Promise<void>((resolve) => ctx.on('server/ready', () => {
      listening = true
      resolve()
    }))
    // A store that refuses to open (locked, damaged) fails the boot instead of leaving it waiting.
    const refused = new Promise<never>((_, reject) => ctx.on('database/refused', reject))
    await ctx.start()
    const timeout = this.options.timeout ?? BOOT_TIMEOUT_MS
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<'expired'>((resolve) => { timer = setTimeout(() => resolve('expired'), timeout) })
    let outcome: unknown
    try {
      outcome = await Promise.race([Promise.all([ready, serving]), expired, refused])
    } catch (error) {
      clearTimeout(timer)
      this.serverFork?.dispose()
      await ctx.stop()
      throw error
    }
    clearTimeout(timer)
    if (outcome === 'expired') {
      const missing = [...wanted.filter((name) => !up.has(name)), ...(listening ? [] : ['the HTTP server'])]
      this.serverFork?.dispose()
      await ctx.stop()
      throw new Error(`TestHost: not ready after ${timeout} ms; still missing: ${missing.join(', ')}. `
        + 'Load the plugins these services need (a short name loads no dependencies), or raise `timeout`.')
    }
    this.ctx = ctx
    this.stopped = false
    this.http = new HttpClient(this.url, this.operatorToken)
  }

  async stop() {
    if (this.stopped) return
    this.stopped = true
    // What a stop through the cordis CLI does first (`exit`): projection caches saved, leases released.
    await (this.ctx as any).parallel?.('exit').catch(() => {})
    const http = this.ctx.server._http
    http.closeAllConnections()
    const closed = new Promise((resolve) => http.close(resolve))
    // Dispose the server (and everything that injects it) while the logger is still alive: the
    // server logs on dispose, and a root stop disposes the logger first.
    this.serverFork?.dispose()
    await this.ctx.stop()
    await closed
  }

  async restart() {
    await this.stop()
    await this.start()
  }

  /** Stop and delete the data directory (unless it was handed in). */
  async dispose() {
    await this.stop()
    if (this.ownsDir) await removeTree(this.dataDir)
  }
}

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

export type PluginEntry = [plugin: any, config?: any]

export interface BootOptions {
  /** Plugins to load after the host kernel, in order. */
  plugins?: PluginEntry[]
  /** Host kernel config (agents, connection). */
  host?: { [K in keyof Host.Config]?: Partial<Host.Config[K]> }
  /** Services to wait for besides the kernel's (e.g. 'supervisor'). */
  waitFor?: string[]
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

  private constructor(readonly dataDir: string, private options: BootOptions, private ownsDir: boolean) {
    this.dbPath = join(dataDir, 'taskward.db')
  }

  static async boot(options: BootOptions = {}) {
    const dataDir = options.dataDir ?? await mkdtemp(join(tmpdir(), 'taskward-host-'))
    const host = new TestHost(dataDir, options, !options.dataDir)
    host.port = await freePort()
    await host.start()
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

  async start() {
    applyLogLevel()
    const ctx = new Context()
    this.errors.length = 0
    ctx.on('internal/error', (error: unknown) => { this.errors.push(error) })
    this.serverFork = ctx.plugin(Server, { host: '127.0.0.1', port: this.port })
    ctx.plugin(Database, this.options.database ?? { driver: 'sqlite', path: this.dbPath })
    ctx.plugin(Host, (this.options.host ?? {}) as Host.Config)
    for (const [plugin, config] of this.options.plugins ?? []) ctx.plugin(plugin, config)
    const wanted = ['database', 'server', 'sessions', 'projections', 'tools', 'models', 'agents', 'commands', 'connection', ...(this.options.waitFor ?? [])]
    const ready = new Promise<void>((resolve) => ctx.inject(wanted, () => resolve()))
    const listening = new Promise<void>((resolve) => ctx.on('server/ready', () => resolve()))
    // A store that refuses to open (locked, damaged) fails the boot instead of leaving it waiting.
    const refused = new Promise<never>((_, reject) => ctx.on('database/refused', reject))
    await ctx.start()
    try {
      await Promise.race([ready, refused])
    } catch (error) {
      this.serverFork?.dispose()
      await ctx.stop()
      throw error
    }
    await listening
    this.ctx = ctx
    this.stopped = false
    this.http = new HttpClient(this.url, this.operatorToken)
  }

  async stop() {
    if (this.stopped) return
    this.stopped = true
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

import { Context, Schema } from 'cordis'
import { Database } from 'minato'
import { TaskwardMySQLDriver } from './mysql'
import { loadedConfig, strictConfig } from '@taskward/protocol'
import { Durability, TaskwardSQLiteDriver } from './sqlite'
import { guardTablePreparation } from './prepare-guard'
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

export * from './lock'
export * from './file-check'
export * from './sqlite'
export { TaskwardMySQLDriver } from './mysql'

export const name = 'taskward-database'

/**
 * The `database` service for the host: an embedded SQLite file by default, MySQL/MariaDB when several
 * hosts share one store. minato's Database is the service; the driver connects it.
 */
export type Config = Config.SQLite | Config.MySQL

export namespace Config {
  export interface SQLite {
    driver: 'sqlite'
    /** The SQLite file; relative paths resolve against the data directory. */
    path: string
    /** `fsync`: an acknowledged write is on stable storage; `os`: it reached the kernel. */
    durability: Durability
  }
  export interface MySQL {
    driver: 'mysql'
    host: string
    port: number
    user: string
    password: string
    database: string
  }
}

/** `TASKWARD_DATA` moves the data directory; `data/` under the working directory otherwise. */
export function dataDirectory(env: NodeJS.ProcessEnv = process.env) {
  return resolve(env.TASKWARD_DATA || 'data')
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('database', Schema.intersect([
  Schema.object({
    driver: Schema.union(['sqlite', 'mysql'] as const).default('sqlite').description('Storage driver.'),
  }),
  Schema.union([
    Schema.object({
      driver: Schema.const('mysql').required(),
      host: Schema.string().default('127.0.0.1'),
      port: Schema.natural().max(65535).default(3306),
      user: Schema.string().default('root'),
      password: Schema.string().role('secret').default(''),
      database: Schema.string().default('taskward'),
    }),
    Schema.object({
      driver: Schema.const('sqlite'),
      path: Schema.string().default('taskward.db').description('SQLite file, relative to the data directory.'),
      durability: Schema.union(['fsync', 'os'] as const).default('fsync')
        .description('fsync: a write is acknowledged once flushed to stable storage (survives power loss); os: once handed to the kernel (survives a crash of the host, not of the machine).'),
    }),
  ]),
]) as any)

export function apply(ctx: Context, loaded: Config) {
  const config = loadedConfig('database', loaded) as Config
  ctx.plugin<undefined>(Database as any)
  guardTablePreparation(ctx, () => config.driver === 'mysql' ? `MySQL/MariaDB at ${config.host}:${config.port}` : `SQLite ${config.path}`)
  if (config.driver === 'mysql') {
    const { driver: _, ...options } = config
    ctx.plugin(TaskwardMySQLDriver as any, options)
  } else {
    const path = resolve(dataDirectory(), config.path)
    // The SQLite driver refuses to open a file whose directory does not exist yet.
    mkdirSync(dirname(path), { recursive: true })
    ctx.plugin(TaskwardSQLiteDriver as any, { path, durability: config.durability ?? 'fsync' })
  }
}

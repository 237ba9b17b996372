import { Context, Schema } from 'cordis'
import { Database } from 'minato'
import { SQLiteDriver } from '@minatojs/driver-sqlite'
import { TaskwardMySQLDriver } from './mysql'
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

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

export const Config: Schema<Partial<Config>, Config> = Schema.intersect([
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
    }),
  ]),
]) as any

export function apply(ctx: Context, config: Config) {
  ctx.plugin<undefined>(Database as any)
  if (config.driver === 'mysql') {
    const { driver: _, ...options } = config
    ctx.plugin(TaskwardMySQLDriver as any, options)
  } else {
    const path = resolve(dataDirectory(), config.path)
    // The SQLite driver refuses to open a file whose directory does not exist yet.
    mkdirSync(dirname(path), { recursive: true })
    ctx.plugin(SQLiteDriver as any, { path })
  }
}

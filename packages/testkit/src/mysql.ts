import type { Context } from 'cordis'
import { storeDriver } from '@taskward/host'

/**
 * The `database` config of a MySQL/MariaDB test store, from a URL
 * `mysql://user:password@host:port/database` (CI sets TASKWARD_TEST_MYSQL to one).
 */
export function mysqlTestConfig(url: string) {
  const parsed = new URL(url)
  return {
    driver: 'mysql' as const,
    host: parsed.hostname,
    port: Number(parsed.port || 3306),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database: parsed.pathname.slice(1),
  }
}

/** One SQL statement on the MySQL/MariaDB store of the host whose context is `ctx`. */
export function storeQuery(ctx: Context) {
  return (sql: string, values: unknown[] = []) => new Promise<any>((resolve, reject) => {
    storeDriver(ctx).pool.query(sql, values, (error: any, result: any) => error ? reject(error) : resolve(result))
  })
}

/**
 * Another host takes the lease of `sessionId` (its token grows, as at a real take), as a host frozen
 * past its lease would find it; `giveBack` puts the lease as it was, as if that host let go again.
 */
export async function takeLeaseElsewhere(ctx: Context, sessionId: string, holder = 'other-host') {
  const query = storeQuery(ctx)
  const [lease] = await query('SELECT `holder`, `token` FROM `taskward_lease` WHERE `sessionId` = ?', [sessionId])
  await query('UPDATE `taskward_lease` SET `token` = `token` + 1, `holder` = ? WHERE `sessionId` = ?', [holder, sessionId])
  return {
    giveBack: () => query('UPDATE `taskward_lease` SET `token` = ?, `holder` = ? WHERE `sessionId` = ?', [lease.token, lease.holder, sessionId]),
  }
}

/**
 * For a MySQL/MariaDB suite's `before` hook: the suite runs when TASKWARD_TEST_MYSQL is set, is skipped
 * elsewhere, and fails in CI without it (.ci/run starts MariaDB, so a missing URL is a broken CI).
 */
export function skipWithoutMysql(suite: { skip(): void }) {
  if (process.env.TASKWARD_TEST_MYSQL) return
  if (process.env.CI) throw new Error('CI must set TASKWARD_TEST_MYSQL (.ci/run starts MariaDB)')
  suite.skip()
}

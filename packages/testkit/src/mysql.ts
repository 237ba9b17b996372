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

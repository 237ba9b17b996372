import type { Context } from 'cordis'
import { TaskwardError } from '@taskward/protocol'
import { randomBytes } from 'node:crypto'
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { storeDriver } from './health'

/** Where a running host tells local tools (backup, doctor) how to reach it: beside the database. */
export const HOST_FILE = 'taskward.host.json'

/**
 * Operator-only store routes, and the host file that lets `npm run backup` and `npm run doctor`
 * reach this host with the operator token (mode 0600, in the data directory, which holds every
 * session's data anyway; removed when the host stops).
 */
export function storeRoutes(ctx: Context) {
  ctx.connection.register({
    path: '/api/store/backup',
    methods: ['POST'],
    access: 'operator',
    handler: () => {
      const driver = storeDriver(ctx)
      if (typeof driver?.backup !== 'function') {
        throw new TaskwardError('BAD_REQUEST', 'This store has no online backup here: back up MySQL/MariaDB with `mysqldump --single-transaction` (docs/operations.md, "Backup and restore").')
      }
      const temp = join(dirname(driver.path), `taskward.backup-${randomBytes(6).toString('hex')}.tmp`)
      try {
        driver.backup(temp)
        return new Response(readFileSync(temp), { headers: { 'content-type': 'application/vnd.sqlite3' } })
      } finally {
        rmSync(temp, { force: true })
      }
    },
  })

  const driver = storeDriver(ctx)
  if (typeof driver?.path !== 'string') return
  const file = join(dirname(driver.path), HOST_FILE)
  const announce = () => {
    writeFileSync(file, JSON.stringify({ pid: process.pid, url: ctx.connection.baseUrl, operatorToken: ctx.connection.tokens.operatorToken }) + '\n', { mode: 0o600 })
    chmodSync(file, 0o600)
  }
  // The server may have started listening before the database (and so this plugin) was ready.
  if ((ctx.server as any)._http?.listening) announce()
  ctx.on('server/ready', announce)
  ctx.on('dispose', () => {
    try {
      const written = JSON.parse(readFileSync(file, 'utf8'))
      if (written.pid === process.pid) rmSync(file, { force: true })
    } catch {}
  })
}

#!/usr/bin/env node
// `npm run doctor [-- --data DIR]`: one line per check with a verdict (OK / WARN / FAIL); exit 1 on any FAIL.
// With a host running on the data directory, it asks that host (`/health?verbose`, operator token from
// DATA/taskward.host.json): Node, data directory and lock, database integrity and schema, every
// session against the loaded readers, the recovery sandbox, model routes (keys never printed) and
// every plugin's config. With none running, it checks what needs no host: Node, the lock, the file.
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DataDirLock, checkFileHeader, holderAlive, readHolder, describeHolder } from '@taskward/plugin-database'
import { formatFindings, type Finding } from '@taskward/host'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
let data = process.env.TASKWARD_DATA || join(root, 'data')
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--data') data = args[++i]
  else {
    console.error(`Unknown option ${args[i]}. Usage: npm run doctor -- [--data DIR]`)
    process.exit(2)
  }
}
data = resolve(data)
const file = join(data, 'taskward.db')

async function online(): Promise<Finding[] | undefined> {
  const hostFile = join(data, 'taskward.host.json')
  if (!existsSync(hostFile)) return
  const host = JSON.parse(readFileSync(hostFile, 'utf8'))
  try {
    process.kill(host.pid, 0)
  } catch (error: any) {
    if (error?.code !== 'EPERM') return
  }
  const response = await fetch(`${host.url}/health?verbose`, { headers: { authorization: `Bearer ${host.operatorToken}` } })
  const body = await response.json() as { findings?: Finding[], error?: string }
  if (!body.findings) return [{ check: 'host', verdict: 'fail', detail: `the host at ${host.url} answered ${response.status}: ${body.error}` }]
  return [{ check: 'host', verdict: 'ok', detail: `running as pid ${host.pid} at ${host.url}` }, ...body.findings]
}

async function offline(): Promise<Finding[]> {
  const major = Number(process.versions.node.split('.')[0])
  const findings: Finding[] = [{ check: 'node', verdict: major >= 20 ? 'ok' : 'fail', detail: `Node ${process.version}${major >= 20 ? '' : ': Taskward needs Node 20 or newer'}` }]
  const lockFile = `${file}.lock`
  const holder = readHolder(lockFile)
  if (holder && holder !== 'unreadable' && holderAlive(lockFile, holder)) {
    findings.push({ check: 'data directory', verdict: 'warn', detail: `${data}: locked by a host (${describeHolder(holder)}) that did not announce itself; its checks are unavailable` })
    return findings
  }
  findings.push({ check: 'data directory', verdict: 'ok', detail: `${data}: no host running${holder ? ' (a stale lock from a stopped host will be taken over at start)' : ''}` })
  const lock = new DataDirLock(lockFile, `The data directory ${data}`)
  lock.acquire()
  try {
    if (checkFileHeader(file) === 'missing') {
      findings.push({ check: 'database', verdict: 'ok', detail: `${file} does not exist yet; the first start creates it` })
      return findings
    }
    const initSqlJs = (await import('@minatojs/sql.js')).default
    const sqlite = await initSqlJs({ locateFile: (name: string) => require.resolve('@minatojs/sql.js/dist/' + name) })
    const db = new sqlite.Database(file)
    try {
      db.exec('PRAGMA locking_mode = EXCLUSIVE')
      const quick = db.exec('PRAGMA quick_check')[0].values.map((row) => String(row[0])).join('; ')
      findings.push({ check: 'database integrity', verdict: quick === 'ok' ? 'ok' : 'fail', detail: `${file}: quick_check ${quick}` })
      const sessions = db.exec("SELECT count(*) FROM sqlite_master WHERE name = 'taskward_session'")[0].values[0][0]
        ? db.exec('SELECT count(*) FROM taskward_session')[0].values[0][0] : 0
      findings.push({ check: 'sessions', verdict: 'warn', detail: `${sessions} sessions; start the host (npm start) to check them against the loaded readers, the sandbox, model routes and plugin config` })
    } finally {
      db.close()
    }
  } catch (error: any) {
    findings.push({ check: 'database', verdict: 'fail', detail: `${error?.code ? error.code + ': ' : ''}${error?.message ?? error}` })
  } finally {
    lock.release()
  }
  return findings
}

const findings = await online() ?? await offline()
console.log(formatFindings(findings))
process.exit(findings.some((finding) => finding.verdict === 'fail') ? 1 : 0)

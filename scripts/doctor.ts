#!/usr/bin/env node
// `npm run doctor [-- --data DIR]`: one line per check with a verdict (OK / WARN / FAIL); exit 1 on any FAIL.
// With a host running on the data directory, it asks that host (`/health?verbose`, operator token from
// DATA/taskward.host.json): Node, file-system threads, data directory and lock, database integrity and
// schema, the WAL's flushes, every
// session against the loaded readers, the recovery sandbox, model routes (keys never printed) and
// every plugin's config. With none running, it checks what needs no host: Node, the lock, the file.
import { accessSync, constants, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DataDirLock, checkFileHeader, holderAlive, readHolder, describeHolder } from '@taskward/plugin-database'
import { formatFindings, nodeFinding, type Finding } from '@taskward/host'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
let data = process.env.TASKWARD_DATA || join(root, 'data')
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--data' && args[i + 1]) data = args[++i]
  else {
    console.error(`${args[i] === '--data' ? '--data needs a directory' : `Unknown option ${args[i]}`}. Usage: npm run doctor -- [--data DIR]`)
    process.exit(2)
  }
}
data = resolve(data)
const file = join(data, 'taskward.db')

/** What an error says, with its code first: a TaskwardError's code, or the system call's (EACCES, ENOTDIR…). */
function describe(error: any) {
  const message = String(error?.message ?? error)
  return error?.code && !message.startsWith(error.code) ? `${error.code}: ${message}` : message
}

/**
 * The running host's own findings (`answered`), or notes on a host file that led nowhere, to print
 * before the checks that need no host.
 */
async function online(): Promise<{ answered: boolean, findings: Finding[] }> {
  const none = { answered: false, findings: [] }
  const hostFile = join(data, 'taskward.host.json')
  let host: { pid: number, url: string, operatorToken: string }
  try {
    host = JSON.parse(readFileSync(hostFile, 'utf8'))
  } catch (error: any) {
    // None (no host announced itself), or not readable as this user: the checks below say more.
    if (error?.code) return none
    return { answered: false, findings: [{ check: 'host', verdict: 'warn', detail: `${hostFile} is not valid JSON (${error?.message ?? error}); checking without the host` }] }
  }
  try {
    process.kill(host.pid, 0)
  } catch (error: any) {
    if (error?.code !== 'EPERM') return none
  }
  try {
    const response = await fetch(`${host.url}/health?verbose`, { headers: { authorization: `Bearer ${host.operatorToken}` }, signal: AbortSignal.timeout(10_000) })
    const body = await response.json() as { findings?: Finding[], error?: string }
    if (!body.findings) return { answered: true, findings: [{ check: 'host', verdict: 'fail', detail: `the host at ${host.url} answered ${response.status}: ${body.error}` }] }
    return { answered: true, findings: [{ check: 'host', verdict: 'ok', detail: `running as pid ${host.pid} at ${host.url}` }, ...body.findings] }
  } catch (error) {
    return { answered: false, findings: [{ check: 'host', verdict: 'warn', detail: `pid ${host.pid} announced itself at ${host.url} but does not answer (${describe((error as any)?.cause ?? error)}); checking without it` }] }
  }
}

/**
 * The data directory as a start will meet it, when it is not one to look into: missing (an OK when the
 * start can create it: its nearest existing parent is a directory this user can write) or a FAIL saying
 * why a start would not get far. Undefined for a directory this user can read and write.
 */
function directoryVerdict(): Finding | undefined {
  const check = 'data directory'
  let stats
  try {
    stats = statSync(data)
  } catch (error: any) {
    if (error?.code !== 'ENOENT') return { check, verdict: 'fail', detail: `${data} cannot be reached (${describe(error)}): every part of the path must be a directory this user may enter` }
    let parent = dirname(data)
    while (dirname(parent) !== parent && !statSync(parent, { throwIfNoEntry: false })) parent = dirname(parent)
    try {
      if (!statSync(parent).isDirectory()) throw Object.assign(new Error(`${parent} is not a directory`), { code: 'ENOTDIR' })
      accessSync(parent, constants.W_OK | constants.X_OK)
    } catch (parentError) {
      return { check, verdict: 'fail', detail: `${data} does not exist and \`npm start\` cannot create it (${describe(parentError)}): create it, or pass another --data DIR` }
    }
    return { check, verdict: 'ok', detail: `${data}: not created yet — \`npm start\` creates it` }
  }
  if (!stats.isDirectory()) return { check, verdict: 'fail', detail: `${data} is a file, not a directory: move it away, or pass another --data DIR` }
  try {
    accessSync(data, constants.R_OK | constants.W_OK | constants.X_OK)
  } catch (error) {
    return { check, verdict: 'fail', detail: `${data} cannot be read and written by this user (${describe(error)}); the host needs both: fix its owner or permissions, or pass another --data DIR` }
  }
}

async function databaseFindings(): Promise<Finding[]> {
  if (checkFileHeader(file) === 'missing') return [{ check: 'database', verdict: 'ok', detail: `${file}: not created yet — \`npm start\` creates it` }]
  const initSqlJs = (await import('@minatojs/sql.js')).default
  const sqlite = await initSqlJs({ locateFile: (name: string) => require.resolve('@minatojs/sql.js/dist/' + name) })
  const db = new sqlite.Database(file)
  try {
    db.exec('PRAGMA locking_mode = EXCLUSIVE')
    const quick = db.exec('PRAGMA quick_check')[0].values.map((row) => String(row[0])).join('; ')
    const findings: Finding[] = [{ check: 'database integrity', verdict: quick === 'ok' ? 'ok' : 'fail', detail: `${file}: quick_check ${quick}` }]
    if (quick !== 'ok') return findings
    const sessions = db.exec("SELECT count(*) FROM sqlite_master WHERE name = 'taskward_session'")[0].values[0][0]
      ? db.exec('SELECT count(*) FROM taskward_session')[0].values[0][0] : 0
    findings.push({ check: 'sessions', verdict: 'warn', detail: `${sessions} sessions; start the host (npm start) to check them against the loaded readers, the sandbox, model routes and plugin config` })
    return findings
  } finally {
    db.close()
  }
}

async function offline(): Promise<Finding[]> {
  const findings: Finding[] = [nodeFinding()]
  const directory = directoryVerdict()
  if (directory) {
    findings.push(directory)
    if (directory.verdict === 'ok') findings.push({ check: 'database', verdict: 'ok', detail: `${file}: not created yet — \`npm start\` creates it` })
    return findings
  }
  const check = 'data directory'
  const lockFile = `${file}.lock`
  let holder: ReturnType<typeof readHolder>
  try {
    holder = readHolder(lockFile)
  } catch (error) {
    findings.push({ check, verdict: 'fail', detail: `${data}: its lock ${lockFile} cannot be read (${describe(error)}): it must be a file this user can read; remove it if no host runs` })
    return findings
  }
  if (holder && holder !== 'unreadable' && holderAlive(lockFile, holder)) {
    findings.push({ check, verdict: 'warn', detail: `${data}: locked by a host (${describeHolder(holder)}) that did not announce itself; its checks are unavailable` })
    return findings
  }
  // Under the lock, so that no host starts on the file while it is read.
  const lock = new DataDirLock(lockFile, `The data directory ${data}`)
  try {
    lock.acquire()
  } catch (error) {
    findings.push({ check, verdict: 'fail', detail: describe(error) })
    return findings
  }
  findings.push({ check, verdict: 'ok', detail: `${data}: no host running${holder ? ' (a stale lock from a stopped host will be taken over at start)' : ''}` })
  try {
    findings.push(...await databaseFindings())
  } catch (error) {
    findings.push({ check: 'database', verdict: 'fail', detail: describe(error) })
  } finally {
    lock.release()
  }
  return findings
}

let findings: Finding[]
try {
  const host = await online()
  findings = host.answered ? host.findings : [...host.findings, ...await offline()]
} catch (error: any) {
  // A check that throws is a bug of the doctor's, not a verdict on the data: say so, with its stack.
  findings = [{ check: 'doctor', verdict: 'fail', detail: `a check failed unexpectedly: ${describe(error)}` }]
  if (!error?.code) console.error(error?.stack ?? error)
}
console.log(formatFindings(findings))
process.exit(findings.some((finding) => finding.verdict === 'fail') ? 1 : 0)

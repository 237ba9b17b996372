#!/usr/bin/env node
// `npm run backup -- <file> [--data DIR]`: a consistent snapshot of the host's SQLite database.
// With a host running on the data directory, the host writes the snapshot itself (VACUUM INTO, between
// two of its statements) and this script receives it over the operator-only route; with none running,
// this script takes the data directory's lock and snapshots the file the same way. Either way the
// result is checked (integrity_check) before it is put in place; nothing is left half-written.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
let target
let data = process.env.TASKWARD_DATA || join(root, 'data')
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--data') data = args[++i]
  else if (!target && !args[i].startsWith('-')) target = args[i]
  else fail(`Unknown option ${args[i]}.`)
}
if (!target) fail('Usage: npm run backup -- <file> [--data DIR]')
target = resolve(process.cwd(), target)
data = resolve(data)
if (existsSync(target)) fail(`${target} exists; choose a new file name (a backup never overwrites).`)

function fail(message) {
  console.error(message)
  process.exit(2)
}

const initSqlJs = (await import('@minatojs/sql.js')).default
const sqlite = await initSqlJs({ locateFile: (file) => require.resolve('@minatojs/sql.js/dist/' + file) })
const temp = `${target}.partial`
rmSync(temp, { force: true })

const hostFile = join(data, 'taskward.host.json')
let how
try {
  const host = existsSync(hostFile) ? JSON.parse(readFileSync(hostFile, 'utf8')) : undefined
  let alive = false
  if (host) try { process.kill(host.pid, 0); alive = true } catch (error) { alive = error.code === 'EPERM' }
  if (alive) {
    const response = await fetch(`${host.url}/api/store/backup`, { method: 'POST', headers: { authorization: `Bearer ${host.operatorToken}` } })
    if (!response.ok) fail(`The host at ${host.url} refused the backup: ${response.status} ${await response.text()}`)
    writeFileSync(temp, Buffer.from(await response.arrayBuffer()))
    how = `online, from the host running as pid ${host.pid}`
  } else {
    // No host: take the lock so none starts meanwhile, then snapshot through SQLite.
    const { DataDirLock, checkFileHeader } = await import('@taskward/plugin-database')
    const file = join(data, 'taskward.db')
    const lock = new DataDirLock(`${file}.lock`, `The data directory ${data}`)
    lock.acquire()
    try {
      if (checkFileHeader(file) === 'missing') fail(`No database at ${file}.`)
      const db = new sqlite.Database(file)
      try {
        db.exec('PRAGMA locking_mode = EXCLUSIVE')
        db.run('VACUUM INTO ?', [temp])
      } finally {
        db.close()
      }
    } finally {
      lock.release()
    }
    how = 'offline (no host was running)'
  }
  const copy = new sqlite.Database(temp)
  let verdict, events
  try {
    verdict = copy.exec('PRAGMA integrity_check')[0].values.map((row) => row[0]).join('; ')
    events = copy.exec("SELECT count(*) FROM sqlite_master WHERE name = 'taskward_event'")[0].values[0][0]
      ? copy.exec('SELECT count(*) FROM taskward_event')[0].values[0][0] : 0
  } finally {
    copy.close()
  }
  if (verdict !== 'ok') fail(`The snapshot failed integrity_check (${verdict}); nothing was kept.`)
  renameSync(temp, target)
  console.log(`Backup written to ${target} (${how}): ${events} events, integrity_check ok.`)
} catch (error) {
  rmSync(temp, { force: true })
  fail(`Backup failed: ${error?.message ?? error}`)
}

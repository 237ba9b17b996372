import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { chmod, open } from 'node:fs/promises'
import { delimiter, join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { diagnose, formatFindings, nodeFinding } from '@taskward/host'
import { TestHost, tempWorkspace, removeTree } from '@taskward/testkit'
import Admission from '@taskward/plugin-admission'
import { appendRecord, readerPlugin, REPAIR, tasksReader, TASKS } from '../plugins/admission/tests/fixtures'
import { hostProcess } from '../plugins/database/tests/store-processes'
import { bootRecovery } from '../plugins/recovery/tests/fixtures'
import { findOnPath } from '@taskward/plugin-recovery'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function doctor(dataDir: string): Promise<{ code: number | null, output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'doctor', '--', '--data', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => output += chunk)
    child.stderr.on('data', (chunk) => output += chunk)
    child.on('exit', (code) => resolve({ code, output }))
  })
}

describe('store: npm run doctor', function () {
  this.timeout(240_000)
  let dataDir: string
  beforeEach(async () => { dataDir = await tempWorkspace({}, 'taskward-doctor-') })
  afterEach(async () => { await removeTree(dataDir) })

  it('on a stopped data directory: checks Node, the lock and the file; a damaged file is a FAIL and exit 1', async () => {
    const host = await TestHost.boot({ dataDir })
    await (await host.ctx.sessions.create({ id: 'main', cwd: dataDir })).append('x', {})
    await host.stop()
    const healthy = await doctor(dataDir)
    expect(healthy.code, healthy.output).to.equal(0)
    expect(healthy.output.split('\n')).to.include(formatFindings([nodeFinding()]))
    expect(healthy.output).to.match(/^OK {4}data directory: .*no host running/m)
    expect(healthy.output).to.match(/^OK {4}database integrity: .*quick_check ok/m)
    expect(healthy.output).to.match(/^WARN {2}sessions: 1 sessions; start the host/m)

    const handle = await open(host.dbPath, 'r+')
    await handle.write(randomBytes(16), 0, 16, 0)
    await handle.close()
    const damaged = await doctor(dataDir)
    expect(damaged.code, damaged.output).to.equal(1)
    expect(damaged.output).to.match(/^FAIL {2}database: STORE_CORRUPT: .*taskward\.db is damaged/m)
  })

  it('on a running host: asks it (/health?verbose with the operator token) and never prints a token', async () => {
    const host = hostProcess(dataDir, 'main', 'hold')
    try {
      await host.waitFor(/ready \d+/)
      const { code, output } = await doctor(dataDir)
      expect(code, output).to.equal(0)
      expect(output).to.match(new RegExp(`^OK {4}host: running as pid ${host.child.pid}`, 'm'))
      expect(output).to.match(/^OK {4}data directory: .*held by this host .*durability fsync/m)
      expect(output).to.match(/^OK {4}database schema: /m)
      expect(output).to.match(/^OK {4}model route scripted: no key needed/m)
      const token = JSON.parse(await (await import('node:fs/promises')).readFile(`${dataDir}/taskward.host.json`, 'utf8')).operatorToken
      expect(output).to.not.include(token)
      // Without the operator token the verbose health says nothing.
      const url = JSON.parse(await (await import('node:fs/promises')).readFile(`${dataDir}/taskward.host.json`, 'utf8')).url
      expect((await fetch(`${url}/health?verbose`)).status).to.equal(401)
    } finally {
      host.child.kill('SIGKILL')
      await host.exited
    }
  })

  it('looks bwrap up as the recovery checks do: a relative PATH entry (which checks never get) does not count', async () => {
    // A bwrap found only through a relative entry: the checks' lookups skip it (they would resolve it in
    // the candidate's copy), so the doctor must not report it as the sandbox.
    const dir = await tempWorkspace({ 'relbin/bwrap': '#!/bin/sh\nexit 0\n' }, 'taskward-doctor-path-')
    await chmod(join(dir, 'relbin/bwrap'), 0o755)
    const saved = { path: process.env.PATH, cwd: process.cwd() }
    process.env.PATH = `relbin${delimiter}/nonexistent-taskward-bin`
    process.chdir(dir)
    let host: TestHost | undefined
    try {
      host = await bootRecovery({ sandbox: 'auto' })
      const sandbox = (await diagnose(host.ctx)).find((f) => f.check === 'recovery sandbox')!
      expect(sandbox.verdict, sandbox.detail).to.equal('fail')
      expect(sandbox.detail).to.match(/not installed/)
    } finally {
      process.env.PATH = saved.path
      process.chdir(saved.cwd)
      await host?.dispose()
      await removeTree(dir)
    }
  })

  it('looks bwrap up on the PATH the checks get when the host\'s PATH has no absolute entry (their default, /usr/bin and /bin)', async function () {
    // The checks' PATH is never empty: without an absolute entry it is /usr/bin:/bin, where their
    // bwrap is found; a doctor that saw no directory at all reported it missing (checks refused).
    const saved = { path: process.env.PATH, cwd: process.cwd() }
    process.env.PATH = 'relbin'
    let host: TestHost | undefined
    try {
      const bwrap = await findOnPath('bwrap')
      if (!bwrap) return this.skip()
      host = await bootRecovery({ sandbox: 'auto' })
      const sandbox = (await diagnose(host.ctx)).find((f) => f.check === 'recovery sandbox')!
      expect(sandbox.verdict, sandbox.detail).to.equal('ok')
      expect(sandbox.detail).to.equal(`bubblewrap (${bwrap})`)
    } finally {
      process.env.PATH = saved.path
      await host?.dispose()
    }
  })

  it('names each session that admission would refuse, and why', async () => {
    const host = await TestHost.boot({ dataDir, plugins: [[Admission], [readerPlugin(tasksReader(10))]], waitFor: ['admission'] })
    try {
      const fine = await host.ctx.sessions.create({ id: 'fine', cwd: dataDir })
      await appendRecord(fine, TASKS, 10)
      const blocked = await host.ctx.sessions.create({ id: 'blocked', cwd: dataDir })
      await appendRecord(blocked, REPAIR, 1, 'proposal')
      const findings = await diagnose(host.ctx)
      const sessions = findings.find((f) => f.check === 'sessions')!
      expect(sessions).to.include({ verdict: 'fail' })
      expect(sessions.detail).to.include('1 of 2 sessions')
      const refused = findings.find((f) => f.check === 'session blocked')!
      expect(refused.verdict).to.equal('fail')
      expect(refused.detail).to.include('READER_UNAVAILABLE')
      expect(refused.detail).to.include(`${REPAIR} v1`)
      expect(findings.find((f) => f.check === 'session fine')).to.equal(undefined)
    } finally {
      await host.stop()
    }
  })
})

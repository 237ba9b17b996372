import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import init from '@minatojs/sql.js'
import { tempWorkspace, removeTree } from '@taskward/testkit'
import { hostProcess } from './store-processes'

const require = createRequire(import.meta.url)
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

function backup(file: string, dataDir: string): Promise<{ code: number | null, output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'backup', '--', file, '--data', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => output += chunk)
    child.stderr.on('data', (chunk) => output += chunk)
    child.on('exit', (code) => resolve({ code, output }))
  })
}

async function open(file: string) {
  const sqlite = await init({ locateFile: (name: string) => require.resolve('@minatojs/sql.js/dist/' + name) })
  const db = new sqlite.Database(file)
  try {
    const integrity = db.exec('PRAGMA integrity_check')[0].values.map((row) => String(row[0])).join('; ')
    const seqs = db.exec("SELECT seq FROM taskward_event WHERE sessionId = 'main' ORDER BY seq")[0]?.values.map((row) => Number(row[0])) ?? []
    return { integrity, seqs }
  } finally {
    db.close()
  }
}

describe('store: npm run backup', function () {
  this.timeout(240_000)

  it('writes a consistent snapshot of a running host during appends (a prefix of the log), and of a stopped one', async () => {
    const dataDir = await tempWorkspace({}, 'taskward-backup-')
    const out = await tempWorkspace({}, 'taskward-backup-out-')
    const host = hostProcess(dataDir, 'main', 'append')
    try {
      await host.waitFor(/acked 200\n/)
      const ackedBefore = Math.max(...host.acked)
      const online = await backup(join(out, 'online.db'), dataDir)
      expect(online.code, online.output).to.equal(0)
      expect(online.output).to.include('online, from the host running as pid')
      const ackedAfter = Math.max(...host.acked)
      const snapshot = await open(join(out, 'online.db'))
      expect(snapshot.integrity).to.equal('ok')
      expect(snapshot.seqs).to.deep.equal(snapshot.seqs.map((_, i) => i))
      expect(snapshot.seqs.length).to.be.greaterThan(ackedBefore)
      expect(snapshot.seqs.length).to.be.at.most(ackedAfter + 1 + 3)
      // A backup never overwrites.
      expect((await backup(join(out, 'online.db'), dataDir)).code).to.equal(2)
    } finally {
      host.child.kill('SIGKILL')
      await host.exited
    }
    // The host is gone (killed; its lock is stale): the script snapshots the file itself.
    const offline = await backup(join(out, 'offline.db'), dataDir)
    expect(offline.code, offline.output).to.equal(0)
    expect(offline.output).to.include('offline')
    const copy = await open(join(out, 'offline.db'))
    expect(copy.integrity).to.equal('ok')
    expect(copy.seqs.length).to.be.greaterThan(Math.max(...host.acked))
    expect((await stat(join(out, 'offline.db'))).isFile()).to.equal(true)
    await removeTree(dataDir)
    await removeTree(out)
  })
})

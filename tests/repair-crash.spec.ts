import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  allIdle, bootRepair, completeDiamond, followups, mainSession, proposeRepair, receipts, reopens, workspace,
} from '../plugins/repair/tests/fixtures'

/*
 * A host killed (SIGKILL, a real child process) after the confirmation receipt and before the reopened
 * state: after a restart the proposal is `confirmed`, the task still `complete`, and one more click
 * reopens it exactly once, without a second receipt.
 */

const CHILD = fileURLToPath(new URL('./repair-crash.child.ts', import.meta.url))

function runChild(args: string[]): Promise<{ code: number | null, signal: string | null, stdout: string, stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => stdout += chunk)
    child.stderr.on('data', (chunk) => stderr += chunk)
    child.on('error', reject)
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

describe('repair: a crash between receipt and reopen', function () {
  this.timeout(60000)
  let host: TestHost
  let cwd: string
  let session: Session

  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('leaves the proposal confirmed and the task complete; one more click reopens it exactly once', async () => {
    host = await bootRepair()
    cwd = await workspace()
    session = await mainSession(host, cwd)
    const done = await completeDiamond(host, session)
    await allIdle(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    await host.stop()

    const child = await runChild([host.dataDir, session.id, answer.proposalId, answer.taskId, String(answer.revision)])
    expect(child.signal, child.stderr).to.equal('SIGKILL')
    expect(child.stdout).to.match(/receipt at seq \d+/)

    await host.start()
    session = await host.ctx.sessions.get(session.id)
    let state = await host.ctx.supervisor.state(session)
    expect(state.poisoned).to.equal(undefined)
    expect(state.proposals.map((p) => p.status)).to.deep.equal(['confirmed'])
    expect(state.current).to.deep.equal(done)
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(0)
    const before = await followups(session)

    const click = async () => {
      const response = await host.http.post(`/api/sessions/${session.id}/repair`,
        { action: 'confirm', proposalId: answer.proposalId, taskId: answer.taskId, revision: answer.revision })
      return response.json() as Promise<any>
    }
    expect(await click()).to.include({ ok: true, outcome: 'reopened', revision: done.revision + 1, acceptanceCycle: 2 })
    await allIdle(host, session)
    expect(await click()).to.include({ outcome: 'already-applied' })
    await allIdle(host, session)
    state = await host.ctx.supervisor.state(session)
    expect(state.current).to.include({ phase: 'active', acceptanceCycle: 2 })
    expect(state.proposals.map((p) => p.status)).to.deep.equal(['applied'])
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    expect(await followups(session)).to.equal(before + 1)
  })
})

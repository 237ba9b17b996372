/*
 * `npm run replay -- <session>` against a real data directory: PASS for a log whose recorded decisions
 * and cached projections are what today's code derives; DIFF (exit 1) naming the decision when one
 * is not; the database file is never changed.
 */
import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { RECORD_EVENT_TYPE, recoveryRecord } from '@taskward/protocol'
import { removeTree } from '@taskward/testkit'
import {
  ANSWER_CHECK, answerWorkspace, bootRecovery, call, readyTask, recoveryRecords, reviewsSettled, scriptReview, setAnswer,
} from '../plugins/recovery/tests/fixtures'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

function replay(args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', '--conditions', 'source', join(root, 'scripts', 'replay.ts'), ...args],
      { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
        done({ code: error ? (typeof (error as any).code === 'number' ? (error as any).code : -1) : 0, stdout: String(stdout), stderr: String(stderr) })
      })
  })
}

const sha = async (path: string) => createHash('sha256').update(await readFile(path)).digest('hex')

describe('replay: npm run replay -- <session> on a stored session', function () {
  this.timeout(90_000)
  let dataDir: string
  let cwd: string
  let sessionId: string

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'taskward-replay-data-'))
    cwd = await answerWorkspace('alpha')
    const host = await bootRecovery({ checks: [ANSWER_CHECK], sandbox: 'copy' }, dataDir)
    const { session } = await readyTask(host, cwd)
    sessionId = session.id
    expect((await call(host, session, 'task_request_completion', {})).error?.code).to.equal('VERDICT_NEGATIVE')
    await setAnswer(cwd, 'right')
    scriptReview(host, 'pass')
    await call(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    expect(await recoveryRecords(session, 'decision')).to.have.length(2)
    await host.ctx.supervisor.state(session)
    await host.stop()
  })
  after(async () => {
    await removeTree(dataDir)
    await removeTree(cwd)
  })

  it('re-derives every decision and cached projection of a real session and prints PASS, writing nothing', async () => {
    const before = await sha(join(dataDir, 'taskward.db'))
    const outcome = await replay([sessionId, '--data', dataDir])
    expect(outcome.code, outcome.stderr + outcome.stdout).to.equal(0)
    expect(outcome.stdout).to.include('2 recovery decisions re-derived, 2 cached projections compared').and.match(/^PASS$/m)
    expect(await sha(join(dataDir, 'taskward.db'))).to.equal(before)
  })

  it('prints where a recorded decision differs from the one decide derives, and exits 1', async () => {
    const host = await bootRecovery({ checks: [ANSWER_CHECK], sandbox: 'copy' }, dataDir)
    const session = await host.ctx.sessions.get(sessionId)
    const [last] = (await recoveryRecords(session, 'decision')).slice(-1)
    // A forged decision: the log says COMPLETE for an attempt, this record claims STOP for it.
    const forged = { ...last.payload, decisionId: `${last.payload.taskId}-forged`, action: 'STOP', stopReason: 'stagnation' }
    const written = await session.append(RECORD_EVENT_TYPE, recoveryRecord('decision', forged.decisionId, forged))
    await host.stop()
    const outcome = await replay([sessionId, '--data', dataDir])
    expect(outcome.code).to.equal(1)
    expect(outcome.stdout).to.include(`DIFF decision ${forged.decisionId} at seq ${written.seq} differs`).and.not.match(/^PASS$/m)
  })

  it('refuses an unknown session and a missing database (exit 2)', async () => {
    expect((await replay(['no-such-session', '--data', dataDir])).code).to.equal(2)
    expect((await replay(['x', '--data', join(dataDir, 'missing')])).code).to.equal(2)
  })
})

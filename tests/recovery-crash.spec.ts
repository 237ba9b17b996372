import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { removeTree, type TestHost } from '@taskward/testkit'
import { summarizeJournal } from '@taskward/protocol'
import {
  ANSWER_CHECK, answerWorkspace, bootRecovery, command, ok, readyTask, recoveryRecords, reviewsSettled, scriptReview,
  runCrashChild,
} from '../plugins/recovery/tests/fixtures'

const runChild = runCrashChild

describe('recovery: SIGKILL of the host during a candidate promotion', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string

  afterEach(async () => {
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  for (const [stage, survivor] of [['proposed', 'previous'], ['committed', 'new']] as const) {
    it(`killed after the "${stage}" record: restart + resume leaves exactly one authoritative candidate (the ${survivor} one)`, async () => {
      host = await bootRecovery()
      cwd = await answerWorkspace('right')
      const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
      // A first promotion through the service API: C0 is authoritative.
      await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
      expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'COMPLETE' })
      const c0 = (await host.ctx.recovery.state(session)).authoritative!
      await writeFile(join(cwd, 'notes.txt'), 'why the answer is right\n')
      const c1 = (await host.ctx.workspace.stamp(cwd)).digest

      await host.stop()
      const exit = await runChild(host.dataDir, session.id, stage)
      expect(exit.signal).to.equal('SIGKILL')
      await host.start()

      const restored = await host.ctx.sessions.get(session.id)
      const before = await host.ctx.recovery.state(restored)
      expect(summarizeJournal(before.journal).at(-1)).to.include({ stage, digest: c1 })
      await command(host, restored, '/task resume')

      const after = await host.ctx.recovery.state(restored)
      const summaries = summarizeJournal(after.journal)
      expect(after.authoritative).to.equal(stage === 'proposed' ? c0 : c1)
      expect(summaries.filter((s) => s.stage === 'proposed' || s.stage === 'verified')).to.deep.equal([])
      expect(summaries.filter((s) => s.stage === 'committed').every((s) => s.receipt)).to.equal(true)
      const receipts = await recoveryRecords(restored, 'receipt')
      expect(receipts).to.have.length(stage === 'proposed' ? 1 : 2)

      const reconciledAt = restored.seq
      // The task goes on from the reconciled journal: completion promotes C1 once, never twice.
      scriptReview(host, 'pass')
      await ok(host, restored, 'task_request_completion', {})
      await reviewsSettled(host, restored)
      expect((await host.ctx.supervisor.state(restored)).current!.phase).to.equal('complete')
      const final = await host.ctx.recovery.state(restored)
      expect(final.authoritative).to.equal(c1)
      const finalSummaries = summarizeJournal(final.journal)
      expect(finalSummaries.filter((s) => s.stage === 'committed').map((s) => s.digest)).to.deep.equal([c0, c1])
      expect(finalSummaries.every((s) => s.stage === 'rolled-back' || s.receipt)).to.equal(true)
      expect(await recoveryRecords(restored, 'receipt')).to.have.length(2)
      // The reconciliation was appended at resume, before the next attempt was recorded.
      const nextAttempt = (await recoveryRecords(restored, 'attempt')).find((a) => a.seq >= reconciledAt)!
      const reconciliation = (await recoveryRecords(restored))
        .filter((r) => (r.kind === 'candidate' && r.payload.stage === 'rolled-back') || (r.kind === 'receipt' && r.payload.digest === c1))
        .filter((r) => r.seq < nextAttempt.seq)
      expect(reconciliation).to.have.length(1)
    })
  }
})

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

  /** The first promotion through the service API (C0 authoritative), then a new file: C1 is the candidate. */
  async function promotedOnce() {
    host = await bootRecovery()
    cwd = await answerWorkspace('right')
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'COMPLETE' })
    const c0 = (await host.ctx.recovery.state(session)).authoritative!
    await writeFile(join(cwd, 'notes.txt'), 'why the answer is right\n')
    const c1 = (await host.ctx.workspace.stamp(cwd)).digest
    return { session, c0, c1 }
  }

  /**
   * After restart and resume: `survivor` is the one authoritative candidate, every promotion is closed,
   * `reconciled` records (a roll-back or C1's receipt) were appended at resume; then completion promotes
   * C1 exactly once.
   */
  async function resumeAndComplete(sessionId: string, { c0, c1, survivor, receipts, reconciled }: { c0: string, c1: string, survivor: string, receipts: number, reconciled: number }) {
    const restored = await host.ctx.sessions.get(sessionId)
    const resumedFrom = restored.seq
    await command(host, restored, '/task resume')
    const after = await host.ctx.recovery.state(restored)
    const summaries = summarizeJournal(after.journal)
    expect(after.authoritative).to.equal(survivor)
    expect(summaries.filter((s) => s.stage === 'proposed' || s.stage === 'verified')).to.deep.equal([])
    expect(summaries.filter((s) => s.stage === 'committed').every((s) => s.receipt)).to.equal(true)
    expect(await recoveryRecords(restored, 'receipt')).to.have.length(receipts)
    const reconciledAt = restored.seq

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
    // What resume appended came before the next attempt was recorded.
    const nextAttempt = (await recoveryRecords(restored, 'attempt')).find((a) => a.seq >= reconciledAt)!
    const appendedAtResume = (await recoveryRecords(restored))
      .filter((r) => r.seq >= resumedFrom && r.seq < nextAttempt.seq)
      .filter((r) => (r.kind === 'candidate' && r.payload.stage === 'rolled-back') || (r.kind === 'receipt' && r.payload.digest === c1))
    expect(appendedAtResume).to.have.length(reconciled)
  }

  it('killed as the promotion is about to be appended: nothing of it is on disk, the previous candidate stays authoritative', async () => {
    const { session, c0, c1 } = await promotedOnce()
    const journalBefore = (await recoveryRecords(session)).filter((r) => r.kind === 'candidate' || r.kind === 'receipt').length
    await host.stop()
    expect((await runChild(host.dataDir, session.id, 'before-promotion')).signal).to.equal('SIGKILL')
    await host.start()
    const restored = await host.ctx.sessions.get(session.id)
    const before = await host.ctx.recovery.state(restored)
    expect(before.authoritative).to.equal(c0)
    expect(summarizeJournal(before.journal).some((s) => s.digest === c1)).to.equal(false)
    expect((await recoveryRecords(restored)).filter((r) => r.kind === 'candidate' || r.kind === 'receipt')).to.have.length(journalBefore)
    await resumeAndComplete(session.id, { c0, c1, survivor: c0, receipts: 1, reconciled: 0 })
  })

  it('killed right after the promotion is durable: all of it is on disk (journal, receipt, decision), the new candidate is authoritative', async () => {
    const { session, c0, c1 } = await promotedOnce()
    await host.stop()
    expect((await runChild(host.dataDir, session.id, 'committed')).signal).to.equal('SIGKILL')
    await host.start()
    const restored = await host.ctx.sessions.get(session.id)
    const before = await host.ctx.recovery.state(restored)
    // One append: the stages, the receipt and the decision came together, so none of them is missing.
    expect(summarizeJournal(before.journal).at(-1)).to.include({ stage: 'committed', digest: c1, receipt: true })
    expect(before.authoritative).to.equal(c1)
    expect(before.tasks[Object.keys(before.tasks)[0]].decisions.at(-1)).to.include({ action: 'COMPLETE' })
    await resumeAndComplete(session.id, { c0, c1, survivor: c1, receipts: 2, reconciled: 0 })
  })

  // Hosts before promotions became one append wrote each journal record as its own commit, so a crash
  // could leave a promotion open in the log: reconciliation still finishes or rolls it back.
  for (const [stages, survivor] of [[['proposed'], 'previous'], [['proposed', 'verified'], 'previous'], [['proposed', 'verified', 'committed'], 'new']] as const) {
    it(`a log an older host left open after "${stages.at(-1)}": restart + resume leaves exactly one authoritative candidate (the ${survivor} one)`, async () => {
      const { session, c0, c1 } = await promotedOnce()
      const state = await host.ctx.recovery.state(session)
      const journalId = `candidate-${summarizeJournal(state.journal).length + 1}`
      for (const stage of stages) {
        await host.ctx.recovery.append(session, 'candidate', `${journalId}:${stage}`, { journalId, stage, digest: c1, parent: c0, at: Date.now() })
      }
      await host.stop()
      await host.start()
      const restored = await host.ctx.sessions.get(session.id)
      expect(summarizeJournal((await host.ctx.recovery.state(restored)).journal).at(-1)).to.include({ stage: stages.at(-1), digest: c1, receipt: false })
      await resumeAndComplete(session.id, { c0, c1, survivor: survivor === 'previous' ? c0 : c1, receipts: survivor === 'previous' ? 1 : 2, reconciled: 1 })
    })
  }

  // Under DSH one append is one flush of a line file: a crash may keep any prefix of it. The prefixes
  // that end inside the journal are the older hosts' logs above; this one keeps the whole promotion
  // and its receipt but not the decision.
  it('a log that kept the promotion and its receipt but not the decision: the new candidate stands, nothing to reconcile, completion promotes nothing twice', async () => {
    const { session, c0, c1 } = await promotedOnce()
    const state = await host.ctx.recovery.state(session)
    const journalId = `candidate-${summarizeJournal(state.journal).length + 1}`
    const at = Date.now()
    await host.ctx.recovery.appendRecords(session, [
      ...(['proposed', 'verified', 'committed'] as const).map((stage) => ({ kind: 'candidate' as const, recordId: `${journalId}:${stage}`, payload: { journalId, stage, digest: c1, parent: c0, at } })),
      { kind: 'receipt', recordId: `${journalId}:receipt`, payload: { journalId, digest: c1, previous: c0, at } },
    ])
    const decisions = (await recoveryRecords(session, 'decision')).length
    await host.stop()
    await host.start()
    const restored = await host.ctx.sessions.get(session.id)
    expect((await host.ctx.recovery.state(restored)).authoritative).to.equal(c1)
    expect(await recoveryRecords(restored, 'decision')).to.have.length(decisions)
    await resumeAndComplete(session.id, { c0, c1, survivor: c1, receipts: 2, reconciled: 0 })
  })
})

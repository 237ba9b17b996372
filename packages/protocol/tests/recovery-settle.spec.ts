import { expect } from 'chai'
import Schema from 'schemastery'
import {
  defineReader, indexRecordEvents, lostToWrite, missingReaders, nextSettleStep, RECOVERY_NAMESPACE, recordPairs, recoveryReader,
  stageVerificationSuperseded, SettlePolicySchema, TaskwardError, type RecordEnvelope, type SettlePolicy,
} from '../src'
import { digest, RecoveryLog } from './fixtures/recovery/harness'

/*
 * A stage's background verification that lost the race with a write: when to read the workspace
 * again, when to verify, when to give up (coded). Pure: the adapter reads and sleeps.
 */
describe('recovery: settling a background verification (nextSettleStep)', () => {
  const policy: SettlePolicy = { quietMs: 100, maxWaitMs: 1000, maxRounds: 3, deadlineMs: 10_000 }
  const where = { workspace: '/w', taskId: 't1' }

  it('waits after a lost round, doubling the wait while the workspace keeps changing, capped', () => {
    expect(nextSettleStep(policy, { lostRounds: 1, waits: 0, elapsedMs: 0 }, where)).to.deep.equal({ kind: 'wait', ms: 100 })
    expect(nextSettleStep(policy, { lostRounds: 1, waits: 1, elapsedMs: 200, quiet: false }, where)).to.deep.equal({ kind: 'wait', ms: 200 })
    expect(nextSettleStep(policy, { lostRounds: 1, waits: 3, elapsedMs: 900, quiet: false }, where)).to.deep.equal({ kind: 'wait', ms: 800 })
    expect(nextSettleStep(policy, { lostRounds: 1, waits: 8, elapsedMs: 2000, quiet: false }, where)).to.deep.equal({ kind: 'wait', ms: 1000 })
    // Never past the deadline.
    expect(nextSettleStep(policy, { lostRounds: 1, waits: 8, elapsedMs: 9_700, quiet: false }, where)).to.deep.equal({ kind: 'wait', ms: 300 })
  })

  it('verifies again once two readings agree', () => {
    expect(nextSettleStep(policy, { lostRounds: 2, waits: 1, elapsedMs: 500, quiet: true }, where)).to.deep.equal({ kind: 'verify' })
  })

  it('gives up, coded, when the workspace never settles within the deadline', () => {
    const step = nextSettleStep(policy, { lostRounds: 1, waits: 9, elapsedMs: 10_000, quiet: false }, where)
    expect(step.kind).to.equal('give-up')
    const error = (step as { error: TaskwardError }).error
    expect(TaskwardError.is(error, 'ARTIFACT_CHANGED')).to.equal(true)
    expect(error.details).to.include({ reason: 'workspace-unsettled', taskId: 't1', lostRounds: 1 })
    expect(error.message).to.match(/kept changing/).and.match(/\/w/).and.match(/stop it/)
  })

  it('gives up after maxRounds lost verifications, even on a quiet workspace', () => {
    const step = nextSettleStep(policy, { lostRounds: 3, waits: 0, elapsedMs: 50, quiet: true }, where)
    expect(step.kind).to.equal('give-up')
    expect((step as { error: TaskwardError }).error.details).to.include({ reason: 'workspace-unsettled', lostRounds: 3 })
  })

  it('has defaults, and refuses a policy that could spin', () => {
    expect(SettlePolicySchema({})).to.deep.equal({ quietMs: 500, maxWaitMs: 8000, maxRounds: 5, deadlineMs: 120_000 })
    expect(() => SettlePolicySchema({ quietMs: 0 })).to.throw()
    expect(() => SettlePolicySchema({ maxRounds: 0 })).to.throw()
  })

  it('counts every ARTIFACT_CHANGED as a lost race, nothing else', () => {
    expect(lostToWrite(new TaskwardError('ARTIFACT_CHANGED', 'moved', { reason: 'candidate-moved' }))).to.equal(true)
    expect(lostToWrite(new TaskwardError('ARTIFACT_CHANGED', 'read', { reason: 'modified-during-read' }))).to.equal(true)
    expect(lostToWrite(new TaskwardError('ARTIFACT_UNAVAILABLE', 'gone'))).to.equal(false)
    expect(lostToWrite(new Error('ARTIFACT_CHANGED'))).to.equal(false)
  })

  it('folds an `unverified` record as the task\'s latest give-up, and refuses a malformed one', () => {
    const log = new RecoveryLog('t1')
    const payload = { taskId: 't1', nodeId: 'a', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'kept changing', lostRounds: 2, at: 5 }
    log.append('unverified', payload)
    expect(log.state.tasks.t1.unverified).to.deep.equal({ ...payload, seq: 0 })
    expect(log.state.poisoned).to.equal(undefined)
    log.append('unverified', { ...payload, code: 'not a code' })
    expect(log.state.poisoned?.seq).to.equal(1)
  })

  it('drops a task\'s `unverified` once a later attempt of that task is recorded, and keeps another task\'s', () => {
    const log = new RecoveryLog('t1')
    const payload = { taskId: 't1', nodeId: 'a', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'kept changing', lostRounds: 2, at: 5 }
    log.append('unverified', payload)
    log.append('unverified', { ...payload, taskId: 't2' })
    expect(log.state.tasks.t1.unverified?.seq).to.equal(0)
    log.attempt({ candidate: digest('A'), checks: [['unit', 'PASS']] })
    expect(log.state.poisoned).to.equal(undefined)
    expect(log.state.tasks.t1.unverified).to.equal(undefined)
    expect(log.state.tasks.t2.unverified?.seq).to.equal(1)
  })

  it('writes `unverified` at version 2 and every other kind at 1, so a reader of 1 is refused only where a give-up is recorded', () => {
    const log = new RecoveryLog('t1')
    const payload = { taskId: 't1', nodeId: 'a', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'kept changing', lostRounds: 2, at: 5 }
    const checks = log.append('checks', { taskId: 't1', checks: [{ id: 'unit', argv: ['true'], timeoutMs: 1000 }], setBy: 'user', at: 1 })
    expect((checks.data as RecordEnvelope).schemaVersion).to.equal(1)
    const giveUp = log.append('unverified', payload)
    expect((giveUp.data as RecordEnvelope).schemaVersion).to.equal(2)
    // The reader of the release before (recovery records 1 only), as admission sees it.
    const before = defineReader({ namespace: RECOVERY_NAMESPACE, writes: 1, minVersion: 1, kinds: { checks: { schemas: { 1: Schema.any() } } } })
    const pairs = [...recordPairs(indexRecordEvents([checks]))]
    expect(missingReaders(pairs, [before])).to.deep.equal([])
    const withGiveUp = [...recordPairs(indexRecordEvents([checks, giveUp]))]
    expect(missingReaders(withGiveUp, [before]).map((p) => p.schemaVersion)).to.deep.equal([2])
    expect(missingReaders(withGiveUp, [recoveryReader])).to.deep.equal([])
    // Main wrote give-ups at version 1 for a while (never in a release): still read.
    expect(recoveryReader.read({ ...(giveUp.data as RecordEnvelope), schemaVersion: 1 }, 9).payload).to.deep.equal(payload)
  })

  it('stops a stage verification that is no longer needed: the task ended or moved on, or a later attempt was recorded', () => {
    const active = { id: 't1', phase: 'active' }
    expect(stageVerificationSuperseded(active, 't1', { before: 2, now: 2 })).to.equal(undefined)
    expect(stageVerificationSuperseded(active, 't1', { before: 2, now: 3 })).to.equal('newer-attempt')
    expect(stageVerificationSuperseded({ id: 't1', phase: 'complete' }, 't1', { before: 2, now: 2 })).to.equal('task-ended')
    expect(stageVerificationSuperseded({ id: 't1', phase: 'paused' }, 't1', { before: 2, now: 2 })).to.equal('task-ended')
    expect(stageVerificationSuperseded({ id: 't2', phase: 'active' }, 't1', { before: 0, now: 0 })).to.equal('task-ended')
    expect(stageVerificationSuperseded(undefined, 't1', { before: 0, now: 0 })).to.equal('task-ended')
  })

  it('keeps a stage verification while its stage review is pending (phase reviewing); a completion request supersedes it by its own attempt', () => {
    const reviewing = { id: 't1', phase: 'reviewing' }
    expect(stageVerificationSuperseded(reviewing, 't1', { before: 2, now: 2 })).to.equal(undefined)
    expect(stageVerificationSuperseded(reviewing, 't1', { before: 2, now: 3 })).to.equal('newer-attempt')
  })
})

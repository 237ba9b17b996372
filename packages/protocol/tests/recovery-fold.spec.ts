import { expect } from 'chai'
import {
  completionVeto, decide, foldRecovery, foldRecoveryLog, initRecoveryState, RECORD_EVENT_TYPE, RECOVERY_NAMESPACE,
  recoveryReader, recoveryRecord, RECOVERY_SCHEMA_VERSION, SessionEvent, TaskwardError,
} from '../src'
import { digest, RecoveryLog } from './fixtures/recovery/harness'

const A = digest('A')

function attemptPayload(overrides: Record<string, unknown> = {}) {
  return {
    attemptId: 'a1', taskId: 't', index: 1, candidate: { digest: A, source: 'workspace' }, configuredChecks: ['unit'],
    checks: [{ checkId: 'unit', verdict: 'PASS', durationMs: 3 }], strategy: 0, recordedAt: 10, ...overrides,
  }
}

function event(seq: number, data: unknown, type = RECORD_EVENT_TYPE): SessionEvent {
  return { seq, type, time: 0, data }
}

describe('recovery records and fold', () => {
  it('reads an attempt without fabricating absent optional fields', () => {
    const read = recoveryReader.read(recoveryRecord('attempt', 'r1', attemptPayload() as any), 4)
    expect(read.seq).to.equal(4)
    expect(read.payload).to.not.have.any.keys('agentRequests', 'agentClaim', 'parentCandidate', 'nodeId', 'rerunOf', 'steps')
    expect(read.payload.checks[0]).to.not.have.any.keys('exitCode', 'signature', 'outputExcerpt', 'reason')
  })

  it('poisons on an unreadable record, names its seq, and ignores every later event', () => {
    const good = event(1, recoveryRecord('attempt', 'r1', attemptPayload() as any))
    const bad = event(2, recoveryRecord('attempt', 'r2', attemptPayload({ attemptId: 'a2', index: 2, checks: 'PASS' }) as any))
    const later = event(3, recoveryRecord('attempt', 'r3', attemptPayload({ attemptId: 'a3', index: 2 }) as any))
    const state = foldRecoveryLog([good, bad, later])
    expect(state.poisoned?.seq).to.equal(2)
    expect(state.poisoned?.message).to.match(/^Recovery record at seq 2: .*invalid payload/)
    expect(state.tasks.t.attempts.map((a) => a.attemptId)).to.deep.equal(['a1'])
    expect(() => decide(state, {}, { taskId: 't', at: 1 })).to.throw(TaskwardError).with.property('code', 'RECORD_UNSUPPORTED')
    expect(completionVeto(state, 't')?.code).to.equal('RECORD_UNSUPPORTED')
  })

  it('poisons on an unsupported schema version or kind', () => {
    const v2 = { ...recoveryRecord('attempt', 'r', attemptPayload() as any), schemaVersion: RECOVERY_SCHEMA_VERSION + 1 }
    expect(foldRecovery(initRecoveryState(), event(0, v2)).poisoned?.seq).to.equal(0)
    const unknownKind = { ...recoveryRecord('attempt', 'r', attemptPayload() as any), kind: 'vote' }
    expect(foldRecovery(initRecoveryState(), event(0, unknownKind)).poisoned?.seq).to.equal(0)
  })

  it('poisons on records that break the protocol', () => {
    const cases: Record<string, unknown[]> = {
      'index gap': [attemptPayload({ index: 2 })],
      'duplicate attempt id': [attemptPayload(), attemptPayload({ index: 2 })],
      'result for an unconfigured check': [attemptPayload({ configuredChecks: [] })],
      'two results for one check': [attemptPayload({ checks: [{ checkId: 'unit', verdict: 'PASS', durationMs: 1 }, { checkId: 'unit', verdict: 'FAIL', durationMs: 1 }] })],
      'rerun of an unknown attempt': [attemptPayload(), attemptPayload({ attemptId: 'r1', rerunOf: 'zz' })],
      'rerun on another candidate': [attemptPayload(), attemptPayload({ attemptId: 'r1', rerunOf: 'a1', candidate: { digest: digest('B'), source: 'workspace' } })],
    }
    for (const [name, payloads] of Object.entries(cases)) {
      const events = payloads.map((payload, seq) => event(seq, recoveryRecord('attempt', `r${seq}`, payload as any)))
      expect(foldRecoveryLog(events).poisoned?.seq, name).to.equal(payloads.length - 1)
    }
    const orphanDecision = event(0, recoveryRecord('decision', 'd', {
      decisionId: 'd', taskId: 't', verdict: 'FAIL', action: 'RETRY', reason: 'FAIL_PROGRESS',
      budgetsUsed: { attempts: 1, totalSteps: 1, verifyReruns: 0, strategyChanges: 0 }, decidedAt: 1,
    }))
    expect(foldRecovery(initRecoveryState(), orphanDecision).poisoned?.seq).to.equal(0)
  })

  it('passes other event types and namespaces through unchanged', () => {
    const state = initRecoveryState()
    expect(foldRecovery(state, event(0, { text: 'hi' }, 'user/message'))).to.equal(state)
    expect(foldRecovery(state, event(1, { ...recoveryRecord('attempt', 'r', attemptPayload() as any), namespace: 'dsh-task-supervisor' }))).to.equal(state)
    expect(RECOVERY_NAMESPACE).to.equal('dsh-task-supervisor-recovery')
  })

  it('never modifies the state it folds from', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'x']] })
    const before = JSON.stringify(log.state)
    const snapshot = log.state
    log.round({ candidate: digest('B'), checks: [['unit', 'PASS']] }, {}, true)
    expect(JSON.stringify(snapshot)).to.equal(before)
    expect(log.state).to.not.equal(snapshot)
  })

  it('rebuilds the same state and decisions from the records alone', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'x']], requests: [{ type: 'retry', text: 'again' }] })
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'x']] })
    log.round({ candidate: digest('B'), checks: [['unit', 'PASS']] }, {}, true)
    const refolded = foldRecoveryLog(log.events)
    expect(refolded).to.deep.equal(log.state)
    expect(refolded.tasks[log.taskId].counters).to.deep.equal({ attempts: 3, totalSteps: 3, verifyReruns: 0, strategyChanges: 1 })
    expect(refolded.tasks[log.taskId].decisions.map((d) => d.action)).to.deep.equal(['RETRY', 'CHANGE_STRATEGY', 'COMPLETE'])
  })
})

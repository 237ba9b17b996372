import { expect } from 'chai'
import {
  candidateCommit, decisionPayload, DEFAULT_BUDGETS, gitCandidate, isBudgetStop, RECORD_EVENT_TYPE, recoveryReader, recoveryRecord,
  resolveBudgets, taskOfStateRecord, type AttemptPayload, type RecoveryDecision,
} from '../src'

const HEAD = 'a'.repeat(40)
const TREE = 'b'.repeat(64)

const attempt = (extra: Partial<AttemptPayload> = {}): AttemptPayload => ({
  attemptId: 't-a1', taskId: 't', index: 1, candidate: { digest: HEAD, source: 'git' }, configuredChecks: [], checks: [], strategy: 0, recordedAt: 1, ...extra,
})

describe('recovery candidates, sandbox and budgets in records', () => {
  it('a clean git tree is its HEAD; a dirty one is a digest over HEAD and the tree, never HEAD', () => {
    expect(gitCandidate(HEAD)).to.deep.equal({ digest: HEAD, source: 'git' })
    const dirty = gitCandidate(HEAD, TREE)
    expect(dirty).to.include({ source: 'git', head: HEAD, tree: TREE })
    expect(dirty.digest).to.match(/^[0-9a-f]{64}$/).and.not.equal(HEAD).and.not.equal(TREE)
    expect(gitCandidate(HEAD, 'c'.repeat(64)).digest).to.not.equal(dirty.digest)
    expect(gitCandidate('d'.repeat(40), TREE).digest).to.not.equal(dirty.digest)
    expect(candidateCommit(dirty)).to.equal(HEAD)
    expect(candidateCommit(gitCandidate(HEAD))).to.equal(HEAD)
    expect(candidateCommit({ digest: TREE, source: 'workspace' })).to.equal(undefined)
  })

  it('reads the optional sandbox, head and tree back, and leaves them absent on older records', () => {
    const withAll = recoveryReader.read(recoveryRecord('attempt', 't-a1', attempt({ candidate: gitCandidate(HEAD, TREE), sandbox: 'bwrap' })), 1)
    expect(withAll.payload).to.deep.include({ sandbox: 'bwrap', candidate: gitCandidate(HEAD, TREE) })
    const old = recoveryReader.read(recoveryRecord('attempt', 't-a1', attempt()), 1)
    expect(old.payload).to.not.have.property('sandbox')
    expect(old.payload.candidate).to.deep.equal({ digest: HEAD, source: 'git' })
    expect(() => recoveryReader.read(recoveryRecord('attempt', 't-a1', attempt({ sandbox: 'auto' as any })), 1)).to.throw()
  })

  it('records the resolved budgets in a decision only when given; a reader never fills them in', () => {
    const decision: RecoveryDecision = {
      taskId: 't', attemptId: 't-a1', candidate: HEAD, action: 'STOP', stopReason: 'budget_exhausted:attempts', reason: 'BUDGET_ATTEMPTS',
      verdict: 'FAIL', delta: { newPass: [], changedFailure: false, regression: [], candidateChanged: false, progress: false },
      budgetsUsed: { attempts: 2, totalSteps: 2, verifyReruns: 0, strategyChanges: 0 }, journal: [],
    }
    const budgets = resolveBudgets({ maxAttempts: 2 })
    const recorded = recoveryReader.read(recoveryRecord('decision', 't-d1', decisionPayload(decision, 't-d1', 5, budgets)), 2)
    expect(recorded.payload.budgets).to.deep.equal({ ...DEFAULT_BUDGETS, maxAttempts: 2 })
    const old = recoveryReader.read(recoveryRecord('decision', 't-d1', decisionPayload(decision, 't-d1', 5)), 2)
    expect(old.payload).to.not.have.property('budgets')
    expect(isBudgetStop(decision)).to.equal(true)
    expect(isBudgetStop({ action: 'STOP', stopReason: 'stagnation' })).to.equal(false)
    expect(isBudgetStop({ action: 'RETRY' })).to.equal(false)
  })

  it('finds the task of a supervisor state record and nothing else', () => {
    const state = { namespace: 'dsh-task-supervisor', schemaVersion: 10, kind: 'state', recordId: 'x:1', payload: { id: 'task-1' } }
    expect(taskOfStateRecord({ seq: 3, type: RECORD_EVENT_TYPE, time: 1, data: state })).to.equal('task-1')
    expect(taskOfStateRecord({ seq: 3, type: RECORD_EVENT_TYPE, time: 1, data: { ...state, kind: 'review' } })).to.equal(undefined)
    expect(taskOfStateRecord({ seq: 3, type: 'user/message', time: 1, data: state })).to.equal(undefined)
  })
})

import { expect } from 'chai'
import {
  completionVeto, foldRecoveryLog, JournalRecord, planPromotion, reconcileJournal, summarizeJournal, TaskwardError,
} from '../src'
import { digest, RecoveryLog } from './fixtures/recovery/harness'

const A = digest('A')
const B = digest('B')

/** A log where A was completed (authoritative) and B then passed on top of it. */
function promotedAThenPassingB(): RecoveryLog {
  const log = new RecoveryLog()
  log.round({ candidate: A, checks: [['unit', 'PASS']] }, {}, true)
  log.taskId = 'task-2'
  log.attempt({ candidate: B, checks: [['unit', 'PASS']], parent: A })
  return log
}

function receiptsPerCommit(records: readonly JournalRecord[]) {
  return summarizeJournal(records).filter((s) => s.stage === 'committed')
    .map((s) => records.filter((r) => r.kind === 'receipt' && r.payload.journalId === s.journalId).length)
}

describe('recovery candidate journal', () => {
  it('plans a promotion as proposed, verified, committed, receipt on top of the authoritative candidate', () => {
    const log = promotedAThenPassingB()
    const plan = planPromotion(log.state, B, 5)
    expect(plan.map((r) => r.kind === 'candidate' ? r.payload.stage : r.kind)).to.deep.equal(['proposed', 'verified', 'committed', 'receipt'])
    expect(plan[0].payload).to.include({ digest: B, parent: A, at: 5 })
    expect(plan[3].payload).to.deep.equal({ journalId: plan[0].payload.journalId, digest: B, previous: A, at: 5 })
    expect(plan[0].payload.journalId).to.not.equal(log.state.journal[0].payload.journalId)
    expect(planPromotion(log.state, A, 5)).to.deep.equal([])
  })

  it('rolls back a promotion interrupted after its intent: the authoritative candidate is unchanged', () => {
    const log = promotedAThenPassingB()
    log.appendJournal(planPromotion(log.state, B, 5).slice(0, 1))
    // A restart folds the log again.
    const state = foldRecoveryLog(log.events)
    expect(state.authoritative).to.equal(A)
    const reconciliation = reconcileJournal(state.journal, 6)
    expect(reconciliation.pending).to.include({ stage: 'proposed', digest: B })
    expect(reconciliation.authoritative).to.equal(A)
    expect(reconciliation.actions).to.have.length(1)
    expect(reconciliation.actions[0].payload).to.include({ stage: 'rolled-back', digest: B, parent: A, at: 6 })
    log.appendJournal(reconciliation.actions)
    expect(log.state.poisoned).to.equal(undefined)
    expect(log.state.authoritative).to.equal(A)
    expect(reconcileJournal(log.state.journal, 7)).to.deep.equal({ authoritative: A, actions: [] })
    expect(receiptsPerCommit(log.state.journal)).to.deep.equal([1])
  })

  it('keeps a commit interrupted before its receipt and writes the receipt: one authoritative candidate', () => {
    const log = promotedAThenPassingB()
    log.appendJournal(planPromotion(log.state, B, 5).slice(0, 3))
    const state = foldRecoveryLog(log.events)
    expect(state.authoritative).to.equal(B)
    const reconciliation = reconcileJournal(state.journal, 6)
    expect(reconciliation.pending).to.include({ stage: 'committed', digest: B })
    expect(reconciliation.actions.map((r) => r.kind)).to.deep.equal(['receipt'])
    expect(reconciliation.actions[0].payload).to.include({ digest: B, previous: A })
    log.appendJournal(reconciliation.actions)
    expect(log.state.authoritative).to.equal(B)
    expect(receiptsPerCommit(log.state.journal)).to.deep.equal([1, 1])
  })

  it('settles an interrupted promotion before anything else a decision asks for', () => {
    const log = promotedAThenPassingB()
    log.appendJournal(planPromotion(log.state, B, 5).slice(0, 2))
    const decision = log.decide({}, true)
    expect(decision.action).to.equal('COMPLETE')
    const stages = decision.journal.map((r) => `${r.payload.journalId}:${r.kind === 'candidate' ? r.payload.stage : 'receipt'}`)
    expect(stages).to.deep.equal(['candidate-2:rolled-back', 'candidate-3:proposed', 'candidate-3:verified', 'candidate-3:committed', 'candidate-3:receipt'])
    expect(log.state.poisoned).to.equal(undefined)
    expect(log.state.authoritative).to.equal(B)
    expect(receiptsPerCommit(log.state.journal)).to.deep.equal([1, 1])
  })

  it('refuses to promote while a promotion is unfinished, or a candidate that did not pass', () => {
    const log = promotedAThenPassingB()
    log.appendJournal(planPromotion(log.state, B, 5).slice(0, 1))
    expect(() => planPromotion(log.state, B, 6)).to.throw(TaskwardError).with.property('code', 'CANDIDATE_ILLEGAL')
    const failing = new RecoveryLog()
    failing.attempt({ candidate: A, checks: [['unit', 'FAIL', 'nope']] })
    expect(() => planPromotion(failing.state, A, 1)).to.throw(TaskwardError).with.property('code', 'VALIDATION_MISSING')
    expect(() => planPromotion(failing.state, B, 1)).to.throw(TaskwardError).with.property('code', 'VALIDATION_MISSING')
    // An older pass does not outvote a newer failure on the same candidate.
    const flaky = new RecoveryLog()
    flaky.attempt({ candidate: A, checks: [['unit', 'PASS']] })
    flaky.attempt({ candidate: A, checks: [['unit', 'FAIL', 'flaked']] })
    expect(() => planPromotion(flaky.state, A, 1)).to.throw(TaskwardError).with.property('code', 'VALIDATION_MISSING')
  })

  it('rejects a candidate whose ref moved outside the controller, leaving the authoritative one unchanged', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'PASS']] }, {}, true)
    const foreign = digest('moved externally')
    const rejected = log.round({ candidate: digest('on top of it'), checks: [['unit', 'PASS']], parent: foreign, claim: 'done' }, {}, true)
    expect(rejected).to.include({ action: 'REJECT_CANDIDATE', reason: 'CANDIDATE_NOT_DESCENDANT', authoritative: A })
    expect(rejected.journal).to.deep.equal([])
    expect(log.state.authoritative).to.equal(A)
    expect(TaskwardError.is(completionVeto(log.state, log.taskId), 'CANDIDATE_ILLEGAL')).to.equal(true)
    expect(() => planPromotion(log.state, digest('on top of it'), 1)).to.throw(TaskwardError).with.property('code', 'CANDIDATE_ILLEGAL')
    // Work redone on top of the authoritative candidate is legal again, through its own lineage too.
    expect(log.round({ candidate: B, checks: [['unit', 'FAIL', 'x']], parent: A }).action).to.equal('RETRY')
    expect(log.round({ candidate: digest('B2'), checks: [['unit', 'PASS']], parent: B }, {}, true).action).to.equal('COMPLETE')
  })

  it('poisons the state on a journal record out of order', () => {
    const cases: [string, (log: RecoveryLog) => void][] = [
      ['committed without proposal', (log) => log.append('candidate', { journalId: 'j', stage: 'committed', digest: B, parent: A, at: 1 })],
      ['proposed on a stale parent', (log) => log.append('candidate', { journalId: 'j', stage: 'proposed', digest: B, parent: digest('stale'), at: 1 })],
      ['second receipt', (log) => log.append('receipt', { ...log.state.journal.find((r) => r.kind === 'receipt')!.payload })],
      ['digest changes', (log) => {
        log.append('candidate', { journalId: 'j', stage: 'proposed', digest: B, parent: A, at: 1 })
        log.append('candidate', { journalId: 'j', stage: 'verified', digest: digest('other'), parent: A, at: 1 })
      }],
      ['second open promotion', (log) => {
        log.append('candidate', { journalId: 'j', stage: 'proposed', digest: B, parent: A, at: 1 })
        log.append('candidate', { journalId: 'k', stage: 'proposed', digest: B, parent: A, at: 1 })
      }],
    ]
    for (const [name, act] of cases) {
      const log = promotedAThenPassingB()
      act(log)
      expect(log.state.poisoned, name).to.not.equal(undefined)
      expect(log.state.poisoned!.seq, name).to.equal(log.events.length - 1)
      expect(log.state.authoritative, name).to.equal(A)
    }
  })
})

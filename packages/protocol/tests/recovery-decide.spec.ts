import { expect } from 'chai'
import { completionVeto, decide, DEFAULT_BUDGETS, foldRecoveryLog, TaskwardError } from '../src'
import { digest, RecoveryLog } from './fixtures/recovery/harness'

const A = digest('A')
const B = digest('B')
const C = digest('C')

describe('recovery decide: regression fixtures', () => {
  it('vetoes a false completion: FAIL and the agent claims done', () => {
    const log = new RecoveryLog()
    const decision = log.round({ candidate: A, checks: [['unit', 'FAIL', 'AssertionError: expected 1 to equal 2']], claim: 'done' }, {}, true)
    expect(decision.action).to.not.equal('COMPLETE')
    expect(decision.verdict).to.equal('FAIL')
    expect(decision.journal).to.deep.equal([])
    const veto = completionVeto(log.state, log.taskId)
    expect(TaskwardError.is(veto, 'VERDICT_NEGATIVE')).to.equal(true)
    expect(veto!.details).to.include({ verdict: 'FAIL' })
    expect(log.state.authoritative).to.equal(undefined)
  })

  it('treats no configured checks as MISSING: STOP unverified, never COMPLETE', () => {
    const log = new RecoveryLog()
    const decision = log.round({ candidate: A, checks: [], claim: 'done' }, {}, true)
    expect(decision).to.include({ verdict: 'MISSING', action: 'STOP', stopReason: 'unverified', reason: 'VALIDATION_MISSING' })
    expect(decision.journal).to.deep.equal([])
    expect(TaskwardError.is(completionVeto(log.state, log.taskId), 'VALIDATION_MISSING')).to.equal(true)
    expect(log.state.authoritative).to.equal(undefined)
  })

  it('does not call edit-then-test 40 times with a changing candidate and failure stagnation', () => {
    const log = new RecoveryLog()
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november'.split(' ')
    for (let i = 0; i < 40; i++) {
      const failing = `${words[i % words.length]}-${words[Math.floor(i / words.length)]}`
      const decision = log.round({ candidate: digest(`edit-${i}`), checks: [['unit', 'FAIL', `failing: test ${failing} should work`]] }, { maxAttempts: 50 })
      expect(decision.action, `round ${i}`).to.equal('RETRY')
      if (i > 0) expect(decision.reason).to.equal('FAIL_PROGRESS')
    }
    expect(log.state.tasks[log.taskId].counters.strategyChanges).to.equal(0)
  })

  it('counts a new passing check each round as progress although the task text never changes', () => {
    const log = new RecoveryLog()
    const ids = ['t1', 't2', 't3', 't4', 't5']
    for (let round = 1; round < ids.length; round++) {
      const checks = ids.map((id, i) => [id, i < round ? 'PASS' : 'FAIL', `same task text: make ${'all'} tests pass`] as [string, 'PASS' | 'FAIL', string])
      // The failing lines and candidate never change; only the set of passing checks grows.
      const decision = log.round({ candidate: A, checks, parent: A }, { stagnationIdenticalRounds: 2 })
      expect(decision.action, `round ${round}`).to.equal('RETRY')
      expect(decision.delta.newPass).to.deep.equal([ids[round - 1]])
      expect(decision.delta.progress).to.equal(true)
    }
  })

  it('completes an actual correction over 3 attempts with exactly one receipt', () => {
    const log = new RecoveryLog()
    expect(log.round({ candidate: A, checks: [['unit', 'FAIL', 'TypeError: x is undefined'], ['lint', 'FAIL', 'no-unused-vars']] }).action).to.equal('RETRY')
    expect(log.round({ candidate: B, checks: [['unit', 'PASS'], ['lint', 'FAIL', 'no-unused-vars']] }).reason).to.equal('FAIL_PROGRESS')
    const done = log.round({ candidate: C, checks: [['unit', 'PASS'], ['lint', 'PASS']], claim: 'done' }, {}, true)
    expect(done).to.include({ action: 'COMPLETE', reason: 'PASS_COMPLETION_REQUESTED', authoritative: C })
    expect(done.journal.map((r) => r.kind === 'candidate' ? r.payload.stage : 'receipt')).to.deep.equal(['proposed', 'verified', 'committed', 'receipt'])
    expect(log.state.authoritative).to.equal(C)
    expect(log.state.journal.filter((r) => r.kind === 'receipt')).to.have.length(1)
    expect(completionVeto(log.state, log.taskId, C)).to.equal(undefined)
    // Asking again does not promote twice.
    expect(log.decide({}, true).journal).to.deep.equal([])
    expect(log.state.journal.filter((r) => r.kind === 'receipt')).to.have.length(1)
  })

  it('turns an identical failure twice into CHANGE_STRATEGY while permitted, else STOP stagnation', () => {
    const permitted = new RecoveryLog()
    permitted.round({ candidate: A, checks: [['unit', 'FAIL', 'expected 200 got 500']] })
    const change = permitted.round({ candidate: B, checks: [['unit', 'FAIL', 'expected 200 got 500']] })
    expect(change).to.include({ action: 'CHANGE_STRATEGY', reason: 'FAIL_STAGNATION_IDENTICAL' })

    const exhausted = new RecoveryLog()
    exhausted.round({ candidate: A, checks: [['unit', 'FAIL', 'expected 200 got 500']] }, { maxStrategyChanges: 0 })
    const stop = exhausted.round({ candidate: B, checks: [['unit', 'FAIL', 'expected 200 got 500']] }, { maxStrategyChanges: 0 })
    expect(stop).to.include({ action: 'STOP', stopReason: 'stagnation', reason: 'FAIL_STAGNATION_IDENTICAL' })
    expect(stop.journal).to.deep.equal([])
  })

  it('judges stagnation again only on rounds after a strategy change, and stops once changes run out', () => {
    const log = new RecoveryLog()
    const budgets = { maxStrategyChanges: 1 }
    const same = { checks: [['unit', 'FAIL', 'boom']] as [string, 'FAIL', string][] }
    log.round({ candidate: A, ...same }, budgets)
    expect(log.round({ candidate: A, ...same }, budgets).action).to.equal('CHANGE_STRATEGY')
    expect(log.round({ candidate: A, ...same }, budgets).reason).to.equal('FAIL_NO_PROGRESS')
    expect(log.round({ candidate: A, ...same }, budgets)).to.include({ action: 'STOP', stopReason: 'stagnation' })
  })

  it('counts a no-op attempt (same candidate, same failure) toward stagnation', () => {
    const log = new RecoveryLog()
    const budgets = { stagnationIdenticalRounds: 3 }
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'first failure']] }, budgets)
    expect(log.round({ candidate: B, checks: [['unit', 'FAIL', 'second failure']] }, budgets).reason).to.equal('FAIL_PROGRESS')
    const noop = log.round({ candidate: B, checks: [['unit', 'FAIL', 'second failure']] }, budgets)
    expect(noop).to.include({ action: 'RETRY', reason: 'FAIL_NO_PROGRESS' })
    expect(noop.delta).to.include({ progress: false, candidateChanged: false, changedFailure: false })
    expect(log.round({ candidate: B, checks: [['unit', 'FAIL', 'second failure']] }, budgets).reason).to.equal('FAIL_STAGNATION_IDENTICAL')
  })

  it('counts a changed failure on a changed candidate as progress', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'cannot find module foo']] })
    const decision = log.round({ candidate: B, checks: [['unit', 'FAIL', 'foo.bar is not a function']] })
    expect(decision).to.include({ action: 'RETRY', reason: 'FAIL_PROGRESS' })
    expect(decision.delta).to.deep.equal({ newPass: [], changedFailure: true, regression: [], candidateChanged: true, progress: true })
  })

  it('detects A/B/A ping-pong as stagnation although every pair of rounds differs', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'failure one']] })
    expect(log.round({ candidate: B, checks: [['unit', 'FAIL', 'failure two']] }).reason).to.equal('FAIL_PROGRESS')
    const back = log.round({ candidate: C, checks: [['unit', 'FAIL', 'failure one']] })
    expect(back.delta.progress).to.equal(true)
    expect(back).to.include({ action: 'CHANGE_STRATEGY', reason: 'FAIL_STAGNATION_PINGPONG' })
  })

  it('does not promote a regression, even when the agent claims done', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'PASS'], ['e2e', 'FAIL', 'timeout waiting for page']] })
    const regressed = log.round({ candidate: B, checks: [['unit', 'FAIL', 'broken import'], ['e2e', 'PASS']], claim: 'done' }, {}, true)
    expect(regressed.delta.regression).to.deep.equal(['unit'])
    expect(regressed.delta.newPass).to.deep.equal(['e2e'])
    expect(regressed.action).to.equal('RETRY')
    expect(regressed.journal).to.deep.equal([])
    expect(log.state.authoritative).to.equal(undefined)
    expect(TaskwardError.is(completionVeto(log.state, log.taskId), 'VERDICT_NEGATIVE')).to.equal(true)
  })

  it('re-verifies an inconclusive outcome without an agent turn, then stops after the bound', () => {
    const log = new RecoveryLog()
    const budgets = { maxVerifyReruns: 2 }
    const first = log.round({ candidate: A, checks: [['unit', 'INCONCLUSIVE']] }, budgets, true)
    expect(first).to.include({ action: 'REVERIFY', reason: 'INCONCLUSIVE_RERUN' })
    for (let rerun = 1; rerun <= 2; rerun++) {
      log.attempt({ candidate: A, checks: [['unit', 'INCONCLUSIVE']], rerun: true })
      const decision = log.decide(budgets, true)
      expect(decision.budgetsUsed.verifyReruns).to.equal(rerun)
      expect(decision.action).to.equal(rerun < 2 ? 'REVERIFY' : 'STOP')
      if (rerun === 2) expect(decision).to.include({ stopReason: 'inconclusive', reason: 'INCONCLUSIVE_RERUNS_EXHAUSTED' })
    }
    // Reruns are not agent attempts.
    expect(log.state.tasks[log.taskId].counters).to.include({ attempts: 1, verifyReruns: 2 })
    expect(TaskwardError.is(completionVeto(log.state, log.taskId), 'VALIDATION_MISSING')).to.equal(true)
  })

  it('lets a rerun that passes complete the task', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'INCONCLUSIVE']] }, {}, true)
    log.attempt({ candidate: A, checks: [['unit', 'PASS']], rerun: true })
    expect(log.decide({}, true)).to.include({ action: 'COMPLETE', authoritative: A })
  })

  it('lets FAIL dominate INCONCLUSIVE: no rerun, the failure is acted on', () => {
    const log = new RecoveryLog()
    const decision = log.round({ candidate: A, checks: [['unit', 'INCONCLUSIVE'], ['lint', 'FAIL', 'semi']] }, {}, true)
    expect(decision.verdict).to.equal('FAIL')
    expect(decision.action).to.equal('RETRY')
  })

  it('stops on a check that cannot run: no agent turn can fix configuration', () => {
    const log = new RecoveryLog()
    log.append('attempt', {
      attemptId: 'x1', taskId: log.taskId, index: 1, candidate: { digest: A, source: 'workspace' }, configuredChecks: ['unit'],
      checks: [{ checkId: 'unit', verdict: 'INCONCLUSIVE', durationMs: 1, reason: 'not-runnable' }], strategy: 0, recordedAt: 1,
    })
    expect(log.decide()).to.include({ action: 'STOP', stopReason: 'non_retryable', reason: 'CHECK_NOT_RUNNABLE' })
  })

  it('stops on exhausted attempts with the candidate preserved, and a re-fold from the records agrees', () => {
    const log = new RecoveryLog()
    const budgets = { maxAttempts: 3 }
    const decisions = [0, 1, 2].map((i) => log.round({ candidate: digest(`try-${i}`), checks: [['unit', 'FAIL', `failure ${'abc'[i]}`]] }, budgets))
    expect(decisions.map((d) => d.action)).to.deep.equal(['RETRY', 'RETRY', 'STOP'])
    expect(decisions[2]).to.include({ stopReason: 'budget_exhausted:attempts', reason: 'BUDGET_ATTEMPTS', candidate: digest('try-2') })
    expect(decisions[2].journal).to.deep.equal([])
    // A restart folds the same records: the counters come back, nothing is reset.
    const refolded = foldRecoveryLog(log.events)
    expect(refolded.tasks[log.taskId].counters.attempts).to.equal(3)
    const again = decide(refolded, budgets, { taskId: log.taskId, at: 1 })
    expect(again).to.include({ action: 'STOP', stopReason: 'budget_exhausted:attempts' })
  })

  it('stops on exhausted steps, counting agent steps and reruns', () => {
    const log = new RecoveryLog()
    const budgets = { maxTotalSteps: 10 }
    expect(log.round({ candidate: A, checks: [['unit', 'FAIL', 'x']], steps: 6 }, budgets).action).to.equal('RETRY')
    const decision = log.round({ candidate: B, checks: [['unit', 'FAIL', 'y']], steps: 4 }, budgets)
    expect(decision).to.include({ action: 'STOP', stopReason: 'budget_exhausted:steps', reason: 'BUDGET_STEPS' })
    expect(decision.budgetsUsed).to.deep.equal({ attempts: 2, totalSteps: 10, verifyReruns: 0, strategyChanges: 0 })
  })

  it('still completes a passing candidate when the budget is used up', () => {
    const log = new RecoveryLog()
    log.round({ candidate: A, checks: [['unit', 'FAIL', 'x']] }, { maxAttempts: 2 })
    expect(log.round({ candidate: B, checks: [['unit', 'PASS']] }, { maxAttempts: 2 }, true).action).to.equal('COMPLETE')
  })

  it('lets a pass without a completion request continue, never complete', () => {
    const log = new RecoveryLog()
    const decision = log.round({ candidate: A, checks: [['unit', 'PASS']], claim: 'progress' })
    expect(decision).to.include({ action: 'RETRY', reason: 'PASS_CONTINUE' })
    expect(log.state.authoritative).to.equal(undefined)
  })

  it('ignores agent requests for retries and strategy changes', () => {
    const plain = new RecoveryLog()
    const asked = new RecoveryLog()
    const budgets = { maxStrategyChanges: 0, maxAttempts: 2 }
    for (const log of [plain, asked]) {
      const requests = log === asked ? [{ type: 'retry' as const, text: 'please give me one more try' }, { type: 'strategy' as const, text: 'rewrite it in rust' }] : undefined
      log.round({ candidate: A, checks: [['unit', 'FAIL', 'same']], requests }, budgets)
      log.round({ candidate: A, checks: [['unit', 'FAIL', 'same']], requests }, budgets)
    }
    const last = (log: RecoveryLog) => log.state.tasks[log.taskId].decisions.at(-1)!
    expect(last(asked)).to.include({ action: 'STOP' })
    expect({ ...last(asked), seq: 0 }).to.deep.equal({ ...last(plain), seq: 0 })
    expect(asked.state.tasks[asked.taskId].agentRequests).to.equal(4)
  })

  it('refuses to decide without an attempt and on invalid budgets', () => {
    const log = new RecoveryLog()
    expect(() => decide(log.state, {}, { taskId: 'nope', at: 1 })).to.throw(TaskwardError).with.property('code', 'BAD_REQUEST')
    log.attempt({ candidate: A, checks: [['unit', 'FAIL', 'x']] })
    expect(() => decide(log.state, { maxAttempts: -1 }, { taskId: log.taskId, at: 1 })).to.throw(TaskwardError).with.property('code', 'CONFIG_INVALID')
    expect(DEFAULT_BUDGETS).to.include({ maxAttempts: 20, maxTotalSteps: 300, maxVerifyReruns: 5, stagnationIdenticalRounds: 2, stagnationUnchangedRounds: 3, maxStrategyChanges: 2 })
  })
})

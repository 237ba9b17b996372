import { expect } from 'chai'
import { budgetAtStop, exhaustedBudgetText, standingBudgetStop } from '../src'
import { digest, RecoveryLog } from './fixtures/recovery/harness'

const FAILING: [string, 'FAIL', string][] = [['unit', 'FAIL', 'expected 1 to equal 2']]

describe('recovery: whether a budget STOP still stands', () => {
  it('stands while the recorded use reaches the limit as configured now, and not once it is raised', () => {
    const log = new RecoveryLog()
    expect(log.round({ candidate: digest('A'), checks: FAILING }, { maxAttempts: 2 }).action).to.equal('RETRY')
    const stop = log.round({ candidate: digest('B'), checks: FAILING }, { maxAttempts: 2 })
    expect(stop).to.include({ action: 'STOP', stopReason: 'budget_exhausted:attempts' })
    const exhausted = { budget: 'attempts', key: 'maxAttempts', limit: 2, used: 2 }
    expect(standingBudgetStop(log.state, log.taskId, { maxAttempts: 2 })).to.deep.equal(exhausted)
    expect(budgetAtStop(stop, { maxAttempts: 2 })).to.deep.equal(exhausted)
    expect(exhaustedBudgetText(standingBudgetStop(log.state, log.taskId, { maxAttempts: 2 })!))
      .to.include('attempts budget is used up (2 of 2, recovery budgets.maxAttempts)').and.to.include('Raise budgets.maxAttempts')
    expect(standingBudgetStop(log.state, log.taskId, { maxAttempts: 3 })).to.equal(undefined)
    // Raising one budget while the other is used up names the other.
    expect(standingBudgetStop(log.state, log.taskId, { maxAttempts: 3, maxTotalSteps: 1 })).to.deep.include({ budget: 'steps', key: 'maxTotalSteps', limit: 1 })
  })

  it('does not stand for a task whose latest decision is no budget STOP', () => {
    const log = new RecoveryLog()
    expect(standingBudgetStop(log.state, log.taskId, { maxAttempts: 1 })).to.equal(undefined)
    const unverified = log.round({ candidate: digest('A'), checks: [], claim: 'done' }, { maxAttempts: 1 }, true)
    expect(unverified).to.include({ action: 'STOP', stopReason: 'unverified' })
    expect(standingBudgetStop(log.state, log.taskId, { maxAttempts: 1 })).to.equal(undefined)
    expect(budgetAtStop(unverified, { maxAttempts: 1 })).to.equal(undefined)
  })
})

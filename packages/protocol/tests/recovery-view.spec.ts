import { expect } from 'chai'
import { DEFAULT_BUDGETS, recoveryView, type TaskRecovery } from '@taskward/protocol'

describe('recovery view (what both renderers show of the controller)', () => {
  const checks = [{ id: 'tests', argv: ['npm', 'test'], timeoutMs: 1000 }]

  it('shows the checks in force and every budget untouched before the first attempt', () => {
    const view = recoveryView(undefined, checks, { ...DEFAULT_BUDGETS })
    expect(view.checks).to.deep.equal([{ id: 'tests', command: 'npm test' }])
    expect(view.source).to.equal('config')
    expect(view).to.not.have.property('lastVerdict')
    expect(view.budgets.find((b) => b.id === 'maxAttempts')).to.deep.equal({ id: 'maxAttempts', label: 'attempts', used: 0, limit: 20, left: 20 })
  })

  it('shows the last verdict with each check, and budgets as the decision counted them (never below zero left)', () => {
    const task = {
      taskId: 't', agentRequests: 0, checks,
      counters: { attempts: 3, totalSteps: 9, verifyReruns: 0, strategyChanges: 0 },
      attempts: [{ attemptId: 'a3', checks: [{ checkId: 'tests', verdict: 'FAIL', exitCode: 1, durationMs: 5 }] }],
      decisions: [{
        decisionId: 'd', taskId: 't', attemptId: 'a3', verdict: 'FAIL', action: 'STOP', stopReason: 'budget_exhausted:maxAttempts',
        reason: 'out of attempts', decidedAt: 7, budgetsUsed: { attempts: 3, totalSteps: 9, verifyReruns: 1, strategyChanges: 0 }, seq: 4,
      }],
    } as unknown as TaskRecovery
    const view = recoveryView(task, checks, { ...DEFAULT_BUDGETS, maxAttempts: 2 })
    expect(view.source).to.equal('task')
    expect(view.lastVerdict).to.deep.equal({
      verdict: 'FAIL', action: 'STOP', reason: 'out of attempts', stopReason: 'budget_exhausted:maxAttempts', decidedAt: 7,
      checks: [{ checkId: 'tests', verdict: 'FAIL', exitCode: 1 }],
    })
    expect(view.budgets.map((b) => [b.id, b.used, b.limit, b.left])).to.deep.equal([
      ['maxAttempts', 3, 2, 0], ['maxTotalSteps', 9, 300, 291], ['maxVerifyReruns', 1, 5, 4], ['maxStrategyChanges', 0, 2, 2],
    ])
  })
  it('shows a stage verification that gave up, with its code and node, and no more once it is gone', () => {
    const unverified = { taskId: 't', nodeId: 'b', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'kept changing', lostRounds: 5, at: 9, seq: 12 }
    const task = { taskId: 't', agentRequests: 0, counters: { attempts: 1, totalSteps: 2, verifyReruns: 0, strategyChanges: 0 }, attempts: [], decisions: [], unverified } as unknown as TaskRecovery
    expect(recoveryView(task, checks, { ...DEFAULT_BUDGETS }).unverified).to.deep.equal({
      nodeId: 'b', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'kept changing', lostRounds: 5, at: 9, seq: 12,
      headline: 'Stage b not verified (ARTIFACT_CHANGED).',
    })
    expect(recoveryView({ ...task, unverified: undefined }, checks, { ...DEFAULT_BUDGETS })).to.not.have.property('unverified')
  })
})

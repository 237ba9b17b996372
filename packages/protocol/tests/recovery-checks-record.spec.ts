import { expect } from 'chai'
import {
  foldRecovery, initRecoveryState, RECORD_EVENT_TYPE, recoveryReader, recoveryRecord, type SessionEvent,
} from '../src'

const event = (seq: number, data: unknown): SessionEvent => ({ seq, type: RECORD_EVENT_TYPE, time: 1, data })

describe('recovery: the per-task checks record', () => {
  const checks = [{ id: 'test', argv: ['npm', 'test'], timeoutMs: 1000 }]

  it('is read by the recovery reader and folds into the task, replacing earlier checks', () => {
    const first = recoveryRecord('checks', 'c1', { taskId: 't1', checks, setBy: 'user', at: 5 })
    expect(recoveryReader.read(first, 0).payload).to.deep.equal({ taskId: 't1', checks, setBy: 'user', at: 5 })
    let state = foldRecovery(initRecoveryState(), event(0, first))
    expect(state.tasks.t1.checks).to.deep.equal(checks)
    expect(state.tasks.t1.counters.attempts).to.equal(0)
    state = foldRecovery(state, event(1, recoveryRecord('checks', 'c2', { taskId: 't1', checks: [], setBy: 'user', at: 6 })))
    expect(state.tasks.t1.checks).to.deep.equal([])
    expect(state.poisoned).to.equal(undefined)
  })

  it('poisons the state for a shell-string argv, duplicate ids or a setter other than a user', () => {
    for (const payload of [
      { taskId: 't1', checks: [{ id: 'x', argv: 'npm test', timeoutMs: 1 }], setBy: 'user', at: 1 },
      { taskId: 't1', checks: [checks[0], checks[0]], setBy: 'user', at: 1 },
      { taskId: 't1', checks, setBy: 'agent', at: 1 },
    ]) {
      const state = foldRecovery(initRecoveryState(), event(3, recoveryRecord('checks', 'c', payload as any)))
      expect(state.poisoned?.seq, JSON.stringify(payload)).to.equal(3)
    }
  })
})

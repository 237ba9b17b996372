import { expect } from 'chai'
import { isDeepStrictEqual } from 'node:util'
import { reopenTask, type ConfirmationReceipt, type RepairProposal } from '../src/repair'
import { readTaskState, type Task } from '../src/task'
import { Driver, refuses } from './fixtures/task'

function completed(): Driver {
  const driver = new Driver()
  driver.start('T')
  driver.complete()
  return driver
}

const receiptFor = (p: RepairProposal, seq = 500): ConfirmationReceipt =>
  ({ proposalId: p.id, taskId: p.taskId, taskRevision: p.taskRevision, source: 'web-confirmation', confirmedAt: 777, seq })

describe('reopening a complete task (reopenTask)', () => {
  it('advances the affected runs once, keeps independent acceptance, clears final acceptance', () => {
    const driver = completed()
    const done = driver.task!
    const proposal = driver.propose('p1', ['b', 'c'])
    const reopened = reopenTask(done, proposal, receiptFor(proposal))
    expect(reopened).to.include({ id: 'T', revision: done.revision + 1, phase: 'active', acceptanceCycle: 2, reopenedFromProposalId: 'p1' })
    for (const id of ['b', 'c', 'd']) {
      expect(reopened.nodeRuns[id]).to.deep.equal({ attempt: 2, status: 'pending', evidenceAfterSeq: 500 })
    }
    for (const id of ['a', 'e']) expect(reopened.nodeRuns[id]).to.deep.equal(done.nodeRuns[id])
    expect(reopened).not.to.have.any.keys('completionReview', 'completedAt', 'pendingReview', 'pauseReason')
    expect(reopened.objective).to.equal(done.objective)
    expect(reopened.plan).to.deep.equal(done.plan)
  })

  it('records what the repair replaced in repairHistory', () => {
    const driver = completed()
    const done = driver.task!
    const proposal = driver.propose('p1', ['d'], { reason: 'totals wrong' })
    const reopened = reopenTask(done, proposal, receiptFor(proposal, 321))
    expect(reopened.repairHistory).to.deep.equal([{
      proposalId: 'p1', title: 'repair p1', reason: 'totals wrong', rootNodeIds: ['d'], affectedNodeIds: ['d'],
      previousCycle: 1, previousRuns: done.nodeRuns, previousCompletionReview: done.completionReview,
      completedAt: done.completedAt, confirmedAt: 777, confirmationSeq: 321,
    }])
  })

  it('keeps completedAt out of history when the completed record never had it', () => {
    const driver = completed()
    const { completedAt: _unknown, ...legacy } = driver.task!
    const proposal = driver.propose('p1', ['e'], { task: legacy as Task })
    const reopened = reopenTask(legacy as Task, proposal, receiptFor(proposal))
    expect(reopened.repairHistory![0]).not.to.have.property('completedAt')
  })

  it('counts acceptance cycles from the implicit first: 1 → 2 → 3', () => {
    const driver = completed()
    expect(driver.task).not.to.have.property('acceptanceCycle')
    driver.reopen(driver.propose('p1', ['e']))
    expect(driver.task!.acceptanceCycle).to.equal(2)
    driver.complete()
    expect(driver.task!.acceptanceCycle).to.equal(2)
    const second = driver.reopen(driver.propose('p2', ['a']))
    expect(second.acceptanceCycle).to.equal(3)
    expect(second.repairHistory!.map((h) => [h.proposalId, h.previousCycle])).to.deep.equal([['p1', 1], ['p2', 2]])
    expect(second.nodeRuns.e.attempt).to.equal(2)
    expect(second.nodeRuns.a.attempt).to.equal(2)
    expect(second.nodeRuns.d.attempt).to.equal(2)
  })

  it('is deterministic, canonical and does not touch its inputs', () => {
    const driver = completed()
    const done = structuredClone(driver.task!)
    const proposal = driver.propose('p1', ['b'])
    const receipt = receiptFor(proposal)
    const first = reopenTask(driver.task!, proposal, receipt)
    expect(isDeepStrictEqual(first, reopenTask(driver.task!, proposal, receipt))).to.equal(true)
    expect(driver.task).to.deep.equal(done)
    const written = readTaskState({ namespace: 'dsh-task-supervisor', schemaVersion: 10, kind: 'state', recordId: 'x', payload: first }, 1)
    expect(isDeepStrictEqual(written, first)).to.equal(true)
  })

  it('refuses without a matching confirmation', () => {
    const driver = completed()
    const proposal = driver.propose('p1', ['b'])
    refuses('REPAIR_CONFIRMATION_REQUIRED', () => reopenTask(driver.task!, proposal, undefined))
    refuses('REPAIR_CONFIRMATION_REQUIRED', () => reopenTask(driver.task!, proposal, { ...receiptFor(proposal), proposalId: 'other' }))
  })

  it('refuses stale targets: other revision, other task, changed impact, task not complete', () => {
    const driver = completed()
    const task = driver.task!
    const proposal = driver.propose('p1', ['b'])
    const receipt = receiptFor(proposal)
    refuses('REPAIR_STALE', () => reopenTask({ ...task, revision: task.revision + 1 }, proposal, receipt))
    refuses('REPAIR_STALE', () => reopenTask(task, proposal, { ...receipt, taskRevision: task.revision - 1 }))
    refuses('REPAIR_STALE', () => reopenTask({ ...task, id: 'U' }, proposal, receipt))
    refuses('REPAIR_STALE', () => reopenTask(task, { ...proposal, affectedNodeIds: ['b'] }, receipt))
    refuses('REPAIR_STALE', () => reopenTask(task, { ...proposal, rootNodeIds: ['nope'] }, receipt))
    refuses('REPAIR_STALE', () => reopenTask({ ...task, phase: 'active' }, proposal, receipt))
    refuses('SUPERVISOR_DISABLED', () => reopenTask({ ...task, enabled: false }, proposal, receipt))
  })
})

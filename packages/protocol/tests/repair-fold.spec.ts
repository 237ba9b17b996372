import { expect } from 'chai'
import {
  confirmEnvelope, findIdenticalPending, PROPOSAL_WINDOW, proposalEnvelope, proposalIdentity, reopenTask, type RepairProposal,
} from '../src/repair'
import { admitTool, foldSupervisorEvents, newTask, taskStateEnvelope, type SupervisorState } from '../src/task'
import { Driver } from './fixtures/task'

const fold = (driver: Driver) => foldSupervisorEvents(driver.log.events)
const statuses = (state: SupervisorState) => state.proposals.map((p) => [p.proposal.id, p.status])

function completed(id = 'T', driver = new Driver()): Driver {
  driver.start(id)
  driver.complete()
  return driver
}

function expectPoison(state: SupervisorState, seq: number, pattern: RegExp) {
  expect(state.poisoned, 'projection should be poisoned').to.not.equal(undefined)
  expect(state.poisoned!.seq).to.equal(seq)
  expect(state.poisoned!.message).to.match(pattern)
}

describe('repair in the supervisor projection', () => {
  it('a new proposal supersedes every pending or confirmed one', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    driver.confirm(p1)
    driver.propose('p2', ['c'])
    expect(statuses(fold(driver))).to.deep.equal([['p1', 'superseded'], ['p2', 'pending']])
    driver.propose('p3', ['d'])
    expect(statuses(fold(driver))).to.deep.equal([['p1', 'superseded'], ['p2', 'superseded'], ['p3', 'pending']])
  })

  it('finds an identical pending proposal instead of a duplicate', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b', 'c'])
    const state = fold(driver)
    const again = { ...proposalIdentity(p1), rootNodeIds: ['c', 'b'] }
    expect(findIdenticalPending(state.proposals, again)!.proposal.id).to.equal('p1')
    expect(findIdenticalPending(state.proposals, { ...again, rootNodeIds: ['b'] })).to.equal(undefined)
  })

  it('keeps a window of 50 proposals', () => {
    const driver = completed()
    for (let i = 0; i < PROPOSAL_WINDOW + 3; i++) driver.propose(`p${i}`, ['e'])
    const state = fold(driver)
    expect(state.proposals).to.have.length(PROPOSAL_WINDOW)
    expect(state.proposals[0].proposal.id).to.equal('p3')
    expect(state.proposals.at(-1)).to.deep.include({ status: 'pending' })
    expect(state.proposals.filter((p) => p.status === 'pending')).to.have.length(1)
  })

  it('a confirmed and applied proposal: task reopened, proposal applied, still applied after a rebuild', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    const reopened = driver.reopen(p1)
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    expect(state.current).to.deep.equal(reopened)
    expect(state.proposals[0]).to.deep.include({ status: 'applied', appliedSeq: driver.log.events.length - 1 })
    expect(state.proposals[0].confirmation).to.include({ source: 'web-confirmation', confirmedAt: driver.log.time(driver.log.events.length - 2) })
    expect(foldSupervisorEvents(driver.log.events)).to.deep.equal(state)
    expect(admitTool(state, 'write')).to.deep.equal({ allow: true })
  })

  it('a confirmed proposal whose reopen was interrupted stays confirmed and accepts another click', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    driver.confirm(p1)
    expect(statuses(fold(driver))).to.deep.equal([['p1', 'confirmed']])
    expect(fold(driver).current!.phase).to.equal('complete')
    driver.reopen(p1)
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    expect(state.current!.nodeRuns.b.evidenceAfterSeq).to.equal(state.proposals[0].confirmation!.seq)
  })

  it('decline keeps completion, and the decline carries its own time', () => {
    const driver = completed()
    const done = driver.task!
    const p1 = driver.propose('p1', ['b'])
    driver.decline(p1)
    const state = fold(driver)
    expect(state.current).to.deep.equal(done)
    expect(state.proposals[0].status).to.equal('declined')
    expect(state.proposals[0].decline).to.have.property('declinedAt')
    expect(state.proposals[0].decline).not.to.have.property('confirmedAt')
    expect(admitTool(state, 'write')).to.have.nested.property('deny.code', 'REPAIR_CONFIRMATION_REQUIRED')
  })

  describe('poisons forged or stale repair records', () => {
    it('complete → active without a confirmed proposal', () => {
      const driver = completed()
      const p1 = driver.propose('p1', ['b'])
      // The reopened state is exactly right, but nobody clicked Confirm.
      const forged = reopenTask(driver.task!, p1, { proposalId: 'p1', taskId: 'T', taskRevision: p1.taskRevision, source: 'web-confirmation', confirmedAt: 1, seq: 1 })
      const seq = driver.log.record(taskStateEnvelope(forged)).seq
      expectPoison(fold(driver), seq, /reopened without a confirmed repair proposal/)
    })

    it('complete → active that differs from the recomputed reopen', () => {
      const driver = completed()
      const p1 = driver.propose('p1', ['b'])
      const receipt = driver.confirm(p1)
      const honest = reopenTask(driver.task!, p1, receipt)
      const forged = { ...honest, nodeRuns: { ...honest.nodeRuns, e: { attempt: 1, status: 'pending' as const } } }
      const seq = driver.log.record(taskStateEnvelope(forged)).seq
      const state = fold(driver)
      expectPoison(state, seq, /not the exact transition of confirmed repair p1/)
      expect(admitTool(state, 'write')).to.have.nested.property('deny.code', 'SUPERVISOR_POISONED')
    })

    it('duplicate proposal ids and a proposedSeq that is not the record\'s seq', () => {
      const driver = completed()
      const p1 = driver.propose('p1', ['b'])
      let seq = driver.log.record(proposalEnvelope({ ...p1, proposedSeq: driver.log.nextSeq })).seq
      expectPoison(fold(driver), seq, /duplicate repair proposal id p1/)
      driver.log.events.pop()
      seq = driver.log.record(proposalEnvelope({ ...p1, id: 'p2', proposedSeq: 3 })).seq
      expectPoison(fold(driver), seq, /claims seq 3/)
    })

    it('a proposal for a task that is not complete at that revision, or with a forged impact', () => {
      const driver = completed()
      const p1 = driver.propose('p1', ['b'])
      let seq = driver.log.record(proposalEnvelope({ ...p1, id: 'p2', taskRevision: p1.taskRevision - 1, proposedSeq: driver.log.nextSeq })).seq
      expectPoison(fold(driver), seq, /but that task is complete at revision/)
      driver.log.events.pop()
      seq = driver.log.record(proposalEnvelope({ ...p1, id: 'p3', affectedNodeIds: ['b'], proposedSeq: driver.log.nextSeq })).seq
      expectPoison(fold(driver), seq, /impact that differs/)
    })

    it('a decision for another revision or for a proposal that is no longer pending', () => {
      const driver = completed()
      const p1 = driver.propose('p1', ['b'])
      const stale = (p: RepairProposal, revision: number) => confirmEnvelope(
        { proposalId: p.id, taskId: p.taskId, taskRevision: revision, source: 'web-confirmation', confirmedAt: 1 }, `c${driver.log.nextSeq}`)
      let seq = driver.log.record(stale(p1, p1.taskRevision - 1)).seq
      expectPoison(fold(driver), seq, /stale repair decision/)
      driver.log.events.pop()
      driver.decline(p1)
      seq = driver.log.record(stale(p1, p1.taskRevision)).seq
      expectPoison(fold(driver), seq, /stale repair decision: confirmation of p1, which is declined/)
    })
  })

  describe('historical reopen', () => {
    it('keeps history unique by id across two historical repair cycles and unrelated tasks', () => {
      const driver = completed('T1')
      const t1 = driver.task!
      completed('T2', driver)
      const t2 = driver.task!
      expect(fold(driver).history.map((t) => t.id)).to.deep.equal(['T1'])

      // Cycle 2: repair the archived T1; T2 (complete) is archived in its place.
      const p1 = driver.propose('p1', ['d'], { task: t1 })
      driver.reopen(p1, t1)
      let state = fold(driver)
      expect(state.poisoned).to.equal(undefined)
      expect(state.current!.id).to.equal('T1')
      expect(state.history).to.deep.equal([t2])
      driver.complete()

      // An unrelated task T3 runs; then cycle 3 repairs the archived T1 again.
      const t1Cycle2 = driver.task!
      completed('T3', driver)
      expect(fold(driver).history.map((t) => t.id)).to.deep.equal(['T2', 'T1'])
      driver.reopen(driver.propose('p2', ['a'], { task: t1Cycle2 }), t1Cycle2)
      driver.complete()
      state = fold(driver)
      expect(state.poisoned).to.equal(undefined)
      expect(state.current!.acceptanceCycle).to.equal(3)
      expect(state.current!.repairHistory).to.have.length(2)
      const ids = [state.current!.id, ...state.history.map((t) => t.id)]
      expect(ids).to.deep.equal(['T1', 'T2', 'T3'])
      expect(new Set(ids).size).to.equal(ids.length)
      expect(statuses(state)).to.deep.equal([['p1', 'applied'], ['p2', 'applied']])
    })

    it('refuses (poisons) a historical reopen while the current task is live', () => {
      const driver = completed('T1')
      const t1 = driver.task!
      const p1 = driver.propose('p1', ['b'])
      driver.step((t, at) => newTask(t, { objective: 'live' }, at), 'T2')
      const receipt = driver.confirm(p1)
      const seq = driver.log.record(taskStateEnvelope(reopenTask(t1, p1, receipt))).seq
      expectPoison(fold(driver), seq, /cannot take over while task T2 is planning/)
    })
  })
})

import { expect } from 'chai'
import {
  appliedOutcome, confirmDecision, declineDecision, defaultTitle, EVIDENCE_QUOTE_MAX, quoteEvidence, repairFollowup,
  trackedProposalView, reopenTask,
} from '../src/repair'
import { foldSupervisorEvents, newTask, setEnabled, taskStateEnvelope } from '../src/task'
import { Driver, refuses } from './fixtures/task'

function completed(id = 'T', driver = new Driver()): Driver {
  driver.start(id)
  driver.complete()
  return driver
}

const fold = (driver: Driver) => foldSupervisorEvents(driver.log.events)

describe('repair decisions (confirm and decline checks)', () => {
  it('confirms a pending proposal with a receipt, a confirmed one without a second receipt', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    const binding = { proposalId: 'p1', taskId: 'T', revision: p1.taskRevision }
    const pending = confirmDecision(fold(driver), binding)
    expect(pending).to.include({ kind: 'reopen', receipt: true })
    driver.confirm(p1)
    const confirmed = confirmDecision(fold(driver), binding)
    expect(confirmed).to.include({ kind: 'reopen', receipt: false })
    // The fold accepts the reopen computed from the recorded receipt alone.
    const reopened = reopenTask(driver.task!, p1, confirmed.tracked.confirmation)
    driver.log.record(taskStateEnvelope(reopened))
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    expect(confirmDecision(state, binding).kind).to.equal('applied')
    expect(appliedOutcome(state, state.proposals[0])).to.deep.equal({ taskId: 'T', revision: p1.taskRevision + 1, acceptanceCycle: 2, affectedNodeIds: ['b', 'd'] })
  })

  it('refuses unknown proposals and mismatched bindings with REPAIR_STALE', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    const state = fold(driver)
    refuses('REPAIR_STALE', () => confirmDecision(state, { proposalId: 'nope', taskId: 'T', revision: p1.taskRevision }))
    refuses('REPAIR_STALE', () => confirmDecision(state, { proposalId: 'p1', taskId: 'T', revision: p1.taskRevision - 1 }))
    refuses('REPAIR_STALE', () => confirmDecision(state, { proposalId: 'p1', taskId: 'U', revision: p1.taskRevision }))
  })

  it('refuses superseded and declined proposals; decline is idempotent', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    const p2 = driver.propose('p2', ['c'])
    const b1 = { proposalId: 'p1', taskId: 'T', revision: p1.taskRevision }
    const b2 = { proposalId: 'p2', taskId: 'T', revision: p2.taskRevision }
    refuses('REPAIR_STALE', () => confirmDecision(fold(driver), b1))
    refuses('REPAIR_STALE', () => declineDecision(fold(driver), b1))
    expect(declineDecision(fold(driver), b2).kind).to.equal('decline')
    driver.decline(p2)
    expect(declineDecision(fold(driver), b2).kind).to.equal('declined')
    refuses('REPAIR_STALE', () => confirmDecision(fold(driver), b2))
  })

  it('refuses while another task is live (ACTIVE_TASK_CONFLICT naming it); allows a historical target once it is terminal', () => {
    const driver = completed('T')
    const p1 = driver.propose('p1', ['b'])
    driver.step((t, at) => newTask(t, { objective: 'other' }, at), 'U')
    const binding = { proposalId: 'p1', taskId: 'T', revision: p1.taskRevision }
    const error = refuses('ACTIVE_TASK_CONFLICT', () => confirmDecision(fold(driver), binding))
    expect(error.details).to.include({ activeTaskId: 'U' })
  })

  it('quotes evidence (clipped), titles user proposals and names the cycle, roots and affected nodes in the follow-up', () => {
    expect(quoteEvidence({ seq: 4, type: 'tool/result', time: 0, data: { name: 'read', result: { content: 'x' } } }))
      .to.deep.equal({ seq: 4, type: 'tool/result', text: 'read: {"content":"x"}' })
    expect(quoteEvidence({ seq: 5, type: 'tool/result', time: 0, data: { name: 'write', error: { code: 'FORBIDDEN', message: 'no' } } }).text)
      .to.equal('write: error FORBIDDEN: no')
    const long = quoteEvidence({ seq: 6, type: 'assistant/message', time: 0, data: { text: 'y'.repeat(2000) } })
    expect(long.text.length).to.equal(EVIDENCE_QUOTE_MAX)
    expect(defaultTitle(`  ${'word '.repeat(40)}`)).to.equal('word '.repeat(16).trim())

    const driver = completed()
    const p1 = driver.propose('p1', ['b', 'c'], { reason: 'sums are wrong' })
    const reopened = driver.reopen(p1)
    const message = repairFollowup(reopened, p1)
    expect(message).to.match(/acceptance cycle 2 of task T/).and.to.include('sums are wrong')
      .and.to.include('Rework roots: b, c').and.to.include('b, c, d (after b, c)')
    const view = trackedProposalView(fold(driver).proposals[0], new Map())
    expect(view).to.include({ status: 'applied', sourceLabel: 'main agent' })
    expect(view.evidence).to.deep.equal([])
  })
})

describe('repair decisions and supervision on/off', () => {
  const on = (driver: Driver, enabled: boolean) => driver.step((t, at) => setEnabled(t, { enabled }, at))

  it('a proposal made before /task off is stale (REPAIR_STALE, saying supervision is off), and stays stale after /task on', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    const binding = { proposalId: 'p1', taskId: 'T', revision: p1.taskRevision }
    const off = on(driver, false)
    const error = refuses('REPAIR_STALE', () => confirmDecision(fold(driver), binding))
    expect(error.message).to.include(`complete at revision ${p1.taskRevision + 1}`).and.to.include('supervision is off').and.to.include('/task on')
    expect(error.details).to.include({ proposalId: 'p1', currentRevision: off.revision })
    on(driver, true)
    const after = refuses('REPAIR_STALE', () => confirmDecision(fold(driver), binding))
    expect(after.message).not.to.include('supervision is off')
    // The switch superseded it: it no longer waits for a decision, so a Decline is stale too.
    expect(fold(driver).proposals[0].status).to.equal('superseded')
    refuses('REPAIR_STALE', () => declineDecision(fold(driver), binding))
  })

  it('a confirmation receipt interrupted before its reopen goes stale with /task off', () => {
    const driver = completed()
    const p1 = driver.propose('p1', ['b'])
    driver.confirm(p1)
    on(driver, false)
    on(driver, true)
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    // The receipt's proposal can never be applied at the new revision: it shows as superseded.
    expect(state.proposals[0].status).to.equal('superseded')
    refuses('REPAIR_STALE', () => confirmDecision(state, { proposalId: 'p1', taskId: 'T', revision: p1.taskRevision }))
  })

  it('refuses a proposal at the current revision while supervision is off (SUPERVISOR_DISABLED)', () => {
    const driver = completed()
    const off = on(driver, false)
    // buildProposal refuses a disabled task; only a hand-written record can target this revision.
    refuses('SUPERVISOR_DISABLED', () => driver.propose('p-off', ['b']))
    const p = driver.propose('p-off', ['b'], { task: { ...off, enabled: true } })
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    const error = refuses('SUPERVISOR_DISABLED', () => confirmDecision(state, { proposalId: 'p-off', taskId: 'T', revision: p.taskRevision }))
    expect(error.message).to.include('/task on')
    expect(error.details).to.include({ taskId: 'T', proposalId: 'p-off' })
  })

  it('after /task on a fresh proposal confirms and reopens as usual (cycle 2, one history entry)', () => {
    const driver = completed()
    const done = driver.task!
    driver.propose('p1', ['b'])
    on(driver, false)
    const back = on(driver, true)
    expect(back.revision).to.equal(done.revision + 2)
    const p2 = driver.propose('p2', ['b'])
    expect(p2.taskRevision).to.equal(done.revision + 2)
    const binding = { proposalId: 'p2', taskId: 'T', revision: p2.taskRevision }
    expect(confirmDecision(fold(driver), binding)).to.include({ kind: 'reopen', receipt: true })
    const reopened = driver.reopen(p2)
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    expect(state.current).to.deep.equal(reopened)
    expect(reopened).to.include({ phase: 'active', enabled: true, revision: done.revision + 3, acceptanceCycle: 2, reopenedFromProposalId: 'p2' })
    expect(reopened.repairHistory).to.have.length(1)
    expect(reopened.repairHistory![0]).to.include({ proposalId: 'p2', previousCycle: 1, completedAt: done.completedAt })
    expect(reopened.repairHistory![0].previousRuns).to.deep.equal(done.nodeRuns)
    expect(state.proposals.map((t) => [t.proposal.id, t.status])).to.deep.equal([['p1', 'superseded'], ['p2', 'applied']])
  })
})

import { expect } from 'chai'
import { buildProposal, confirmEnvelope, proposalEnvelope, reopenTask } from '../src/repair'
import {
  admitTool, canonicalTask, clear, COMPLETE_TASK_ALLOWED_TOOLS, EXECUTION_TOOLS, foldSupervisorEvents, isExecutionBlocked,
  newTask, setEnabled, taskStateEnvelope, taskStatusView, type SupervisorState, type Task,
} from '../src/task'
import { ARTIFACT, Driver, refuses } from './fixtures/task'

/*
 * /task off | on of a complete task: complete → complete with only `enabled` and the revision
 * changed. The fold accepts exactly that; every other change of a complete task still needs the
 * confirmed reopen, and a cleared task never changes.
 */

const fold = (driver: Driver) => foldSupervisorEvents(driver.log.events)

function completed(id = 'T'): Driver {
  const driver = new Driver()
  driver.start(id)
  driver.complete()
  return driver
}

function expectPoison(state: SupervisorState, seq: number, pattern: RegExp, what = 'the record') {
  expect(state.poisoned, `${what} should poison the projection`).to.not.equal(undefined)
  expect(state.poisoned!.seq, what).to.equal(seq)
  expect(state.poisoned!.message, what).to.match(pattern)
  expect(isExecutionBlocked(state)).to.equal(true)
}

/** Append `task` as a state record (bypassing the transitions) and return its seq. */
const write = (driver: Driver, task: Task) => driver.log.record(taskStateEnvelope(canonicalTask(task))).seq

describe('supervision on/off of a complete task', () => {
  it('setEnabled keeps a complete task complete and changes only enabled and the revision', () => {
    const done = completed().task!
    const off = setEnabled(done, { enabled: false }, { seq: 500, time: 5000 })
    expect(off).to.deep.equal({ ...done, enabled: false, revision: done.revision + 1 })
    expect(done.enabled, 'the input is not mutated').to.equal(true)
    expect(setEnabled(off, { enabled: false }, { seq: 501, time: 5010 })).to.equal(off)
    const on = setEnabled(off, { enabled: true }, { seq: 502, time: 5020 })
    expect(on).to.deep.equal({ ...done, revision: done.revision + 2 })
    expect(setEnabled(done, { enabled: true }, { seq: 503, time: 5030 })).to.equal(done)
  })

  it('refuses a cleared task (TASK_NOT_EXECUTING) and a session without a task (TASK_NOT_FOUND)', () => {
    const driver = new Driver()
    driver.start('T')
    const cleared = driver.step((t, at) => clear(t, at))
    refuses('TASK_NOT_EXECUTING', () => setEnabled(cleared, { enabled: false }, driver.log.at()))
    refuses('TASK_NOT_FOUND', () => setEnabled(undefined, { enabled: false }, driver.log.at()))
  })

  it('the fold accepts /task off and /task on of the current complete task', () => {
    const driver = completed()
    const done = driver.task!
    const off = driver.step((t, at) => setEnabled(t, { enabled: false }, at))
    let state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    expect(state.current).to.deep.equal(off)
    expect(state.current).to.include({ phase: 'complete', enabled: false, revision: done.revision + 1 })
    expect(taskStatusView(state).availableActions).to.deep.equal(['await-supervision-on'])
    driver.step((t, at) => setEnabled(t, { enabled: true }, at))
    state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    expect(state.current).to.deep.equal({ ...done, revision: done.revision + 2 })
    expect(taskStatusView(state).availableActions).to.deep.equal(['task_propose_repair', 'await-web-confirmation'])
  })

  it('poisons every other change of a complete task, including one that also switches supervision', () => {
    const changes: [string, (done: Task) => Task, RegExp][] = [
      ['a bare revision bump', (done) => ({ ...done, revision: done.revision + 1 }), /changed to complete with more than supervision/],
      ['off plus a new objective', (done) => ({ ...done, enabled: false, objective: 'other', revision: done.revision + 1 }), /changed to complete with more than supervision/],
      ['off without completedAt', (done) => ({ ...done, enabled: false, completedAt: undefined, revision: done.revision + 1 }), /more than supervision/],
      ['off plus a node run changed', (done) => ({
        ...done, enabled: false, revision: done.revision + 1, nodeRuns: { ...done.nodeRuns, b: { ...done.nodeRuns.b, attempt: 2 } },
      }), /more than supervision/],
      ['off into paused', (done) => ({
        ...done, enabled: false, phase: 'paused', pauseReason: 'user', resumePhase: 'active', revision: done.revision + 1,
      }), /changed to paused; a completed task changes only through a confirmed repair/],
      ['off into active', (done) => ({ ...done, enabled: false, phase: 'active', revision: done.revision + 1 }), /reopened without a confirmed repair/],
    ]
    for (const [what, change, pattern] of changes) {
      const driver = completed()
      const seq = write(driver, change(driver.task!))
      expectPoison(fold(driver), seq, pattern, what)
    }
  })

  it('a switch record must continue the revisions', () => {
    const driver = completed()
    const done = driver.task!
    const seq = write(driver, { ...done, enabled: false, revision: done.revision + 2 })
    expectPoison(fold(driver), seq, /revisions must be contiguous/)
  })

  it('a cleared task stays unchangeable, and an archived complete task cannot be switched', () => {
    const driver = new Driver()
    driver.start('T')
    const cleared = driver.step((t, at) => clear(t, at))
    const seq = write(driver, { ...cleared, enabled: false, revision: cleared.revision + 1 })
    expectPoison(fold(driver), seq, /was cleared and cannot change/)

    const archived = completed('T')
    const done = archived.task!
    archived.step((t, at) => newTask(t, { objective: 'next' }, at), 'U')
    archived.step((t, at) => clear(t, at))
    expect(fold(archived).history.map((t) => t.id)).to.deep.equal(['T'])
    const seq2 = write(archived, { ...done, enabled: false, revision: done.revision + 1 })
    expectPoison(fold(archived), seq2, /complete task T changed to complete/)
  })

  it('marks the undecided proposals of earlier revisions superseded when supervision is switched', () => {
    const driver = completed()
    const pending = driver.propose('pending before the switch', ['b'])
    const switched = driver.step((t, at) => setEnabled(t, { enabled: false }, at))
    const state = fold(driver)
    expect(state.poisoned).to.equal(undefined)
    const tracked = state.proposals.find((t) => t.proposal.id === pending.id)!
    // It can never be confirmed at the new revision, so it no longer shows as waiting for a decision.
    expect(tracked).to.include({ status: 'superseded', supersededBySeq: driver.log.events.length - 1 })
    expect(switched.revision).to.equal(pending.taskRevision + 1)
  })

  it('keeps poisoning proposals for a revision before the switch', () => {
    const driver = completed()
    const done = driver.task!
    driver.step((t, at) => setEnabled(t, { enabled: false }, at))
    driver.step((t, at) => setEnabled(t, { enabled: true }, at))
    expect(fold(driver).poisoned).to.equal(undefined)
    driver.propose('old', ['b'], { task: done })
    expectPoison(fold(driver), driver.log.events.length - 1,
      new RegExp(`targets task T revision ${done.revision}, but that task is complete at revision ${done.revision + 2}`))
  })

  it('poisons a reopen of a complete task whose supervision is off', () => {
    const driver = completed()
    const off = driver.step((t, at) => setEnabled(t, { enabled: false }, at))
    // No controller writes a proposal for a disabled task; a hand-written one at the current revision is kept.
    const evidence = driver.log.append('tool/result', { output: 'FAIL b' }).seq
    const proposal = buildProposal({
      id: 'p-off', task: { ...off, enabled: true }, title: 'fix b', reason: 'b is wrong', rootNodeIds: ['b'], evidenceSeqs: [evidence],
      events: driver.log.lookup, artifact: ARTIFACT, proposedAt: 1, proposedSeq: driver.log.nextSeq,
    })
    driver.log.record(proposalEnvelope(proposal))
    const receipt = { proposalId: 'p-off', taskId: 'T', taskRevision: off.revision, source: 'web-confirmation' as const, confirmedAt: 2 }
    const receiptSeq = driver.log.record(confirmEnvelope(receipt, 'c-off')).seq
    expect(fold(driver).poisoned).to.equal(undefined)
    refuses('SUPERVISOR_DISABLED', () => reopenTask(off, proposal, { ...receipt, seq: receiptSeq }))
    const forged = { ...reopenTask({ ...off, enabled: true }, proposal, { ...receipt, seq: receiptSeq }), enabled: false }
    const seq = write(driver, forged)
    expectPoison(fold(driver), seq, /Supervision of task T is off/)
  })

  it('tool admission of a complete task is the same with supervision off: edits stay denied', () => {
    const driver = completed()
    const on = fold(driver)
    driver.step((t, at) => setEnabled(t, { enabled: false }, at))
    const off = fold(driver)
    const tools = [...COMPLETE_TASK_ALLOWED_TOOLS, ...EXECUTION_TOOLS, 'write', 'edit', 'bash', 'some_unknown_tool', 'task_submit_plan']
    for (const tool of tools) {
      const [before, after] = [admitTool(on, tool), admitTool(off, tool)]
      expect(after, tool).to.deep.equal(before)
    }
    expect(admitTool(off, 'write')).to.have.nested.property('deny.code', 'REPAIR_CONFIRMATION_REQUIRED')
    expect(admitTool(off, 'task_start_node')).to.have.nested.property('deny.code', 'TASK_COMPLETED')
    expect(admitTool(off, 'read')).to.deep.equal({ allow: true })
  })
})

import { expect } from 'chai'
import {
  applyPlanReview, approve, assertBinding, clear, edit, newTask, pause, resume, resumeTarget, setEnabled, submitPlan,
  type Task,
} from '../src/task'
import { DIAMOND, Driver, refuses } from './fixtures/task'

const at = (seq: number, id?: string) => ({ seq, time: 5000 + seq, ...(id ? { id } : {}) })

function planning(): Task {
  return newTask(undefined, { objective: 'build it' }, at(1, 'T1'))
}

function reviewingPlan(jobId = 'p1'): Task {
  return submitPlan(planning(), { plan: DIAMOND, jobId }, at(2))
}

describe('task transitions: planning and control', () => {
  it('newTask creates revision 1 in planning, supervised', () => {
    expect(planning()).to.deep.equal({ id: 'T1', revision: 1, objective: 'build it', phase: 'planning', enabled: true, nodeRuns: {} })
  })

  it('newTask refuses while a live task exists, and needs an id and an objective', () => {
    const error = refuses('ACTIVE_TASK_CONFLICT', () => newTask(planning(), { objective: 'other' }, at(3, 'T2')))
    expect(error.message).to.match(/T1 is still planning/)
    refuses('TASK_INVALID', () => newTask(undefined, { objective: 'x' }, at(3)))
    refuses('TASK_INVALID', () => newTask(undefined, { objective: '   ' }, at(3, 'T2')))
  })

  it('newTask is allowed after a terminal task', () => {
    const cleared = clear(planning(), at(2))
    expect(newTask(cleared, { objective: 'again' }, at(3, 'T2'))).to.include({ id: 'T2', revision: 1 })
  })

  it('submitPlan: planning → reviewing with a pending plan review; only while planning; plan validated', () => {
    const task = reviewingPlan()
    expect(task).to.include({ revision: 2, phase: 'reviewing' })
    expect(task.pendingReview).to.deep.equal({ kind: 'plan', jobId: 'p1', forRevision: 2 })
    expect(task.nodeRuns).to.deep.equal({})
    refuses('TASK_NOT_EXECUTING', () => submitPlan(task, { plan: DIAMOND, jobId: 'p2' }, at(3)))
    refuses('TASK_INVALID', () => submitPlan(planning(), { plan: { acceptanceCriteria: [], nodes: [] }, jobId: 'p2' }, at(3)))
    refuses('SUPERVISOR_DISABLED', () => submitPlan(setEnabled(planning(), { enabled: false }, at(2)), { plan: DIAMOND, jobId: 'p' }, at(3)))
  })

  it('applyPlanReview: pass → awaiting-approval, revise → planning with feedback, needs-user → paused decision', () => {
    const passed = applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'pass', findings: [] }, at(3))
    expect(passed).to.include({ phase: 'awaiting-approval', revision: 3 })
    expect(passed).not.to.have.property('pendingReview')
    const revised = applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'revise', findings: ['no tests node'] }, at(3))
    expect(revised).to.include({ phase: 'planning' })
    expect(revised.planFeedback).to.deep.equal(['no tests node'])
    const resubmitted = applyPlanReview(submitPlan(revised, { plan: DIAMOND, jobId: 'p2' }, at(4)), { jobId: 'p2', verdict: 'pass', findings: [] }, at(5))
    expect(resubmitted).not.to.have.property('planFeedback')
    const asked = applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'needs-user', findings: ['which db?'] }, at(3))
    expect(asked).to.include({ phase: 'paused', pauseReason: 'decision', resumePhase: 'planning' })
  })

  it('applyPlanReview refuses a result for another job (stale reviewer callback)', () => {
    refuses('TASK_STALE', () => applyPlanReview(reviewingPlan('p1'), { jobId: 'old', verdict: 'pass', findings: [] }, at(3)))
    refuses('TASK_STALE', () => applyPlanReview(planning(), { jobId: 'p1', verdict: 'pass', findings: [] }, at(3)))
  })

  it('approve: awaiting-approval → active with one pending attempt-1 run per node', () => {
    const ready = applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'pass', findings: [] }, at(3))
    const active = approve(ready, at(4))
    expect(active).to.include({ phase: 'active', revision: 4 })
    expect(Object.keys(active.nodeRuns)).to.deep.equal(['a', 'b', 'c', 'd', 'e'])
    expect(active.nodeRuns.d).to.deep.equal({ attempt: 1, status: 'pending', evidenceAfterSeq: 4 })
    refuses('TASK_NOT_EXECUTING', () => approve(planning(), at(2)))
    refuses('TASK_NOT_EXECUTING', () => approve(active, at(5)))
  })

  it('approve and resume cannot reopen a complete task', () => {
    const driver = new Driver()
    driver.start('T9')
    const complete = driver.complete()
    refuses('TASK_COMPLETED', () => approve(complete, at(99)))
    refuses('TASK_COMPLETED', () => resume(complete, {}, at(99)))
    refuses('TASK_COMPLETED', () => pause(complete, { reason: 'user' }, at(99)))
    refuses('TASK_COMPLETED', () => clear(complete, at(99)))
    // setEnabled on a complete task keeps it complete: see task-enabled.spec.ts.
    expect(setEnabled(complete, { enabled: false }, at(99))).to.include({ phase: 'complete', enabled: false })
    refuses('TASK_COMPLETED', () => edit(complete, { objective: 'x' }, at(99)))
  })

  it('edit: planning keeps planning; awaiting-approval returns to planning; refused while executing', () => {
    expect(edit(planning(), { objective: ' new ' }, at(2))).to.include({ objective: 'new', phase: 'planning', revision: 2 })
    const ready = applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'pass', findings: [] }, at(3))
    expect(edit(ready, { objective: 'changed' }, at(4))).to.include({ phase: 'planning', objective: 'changed' })
    refuses('TASK_NOT_EXECUTING', () => edit(approve(ready, at(4)), { objective: 'late' }, at(5)))
  })

  it('a task paused for its budget is not advertised as one /task resume simply continues', () => {
    const active = approve(applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'pass', findings: [] }, at(3)), at(4))
    const user = pause(active, { reason: 'user' }, at(5))
    expect(() => pause(user, { reason: 'user' }, at(6))).to.throw(/is paused \(user\); the user continues it with \/task resume\.$/)
    const budget = pause(active, { reason: 'budget' }, at(5))
    expect(() => pause(budget, { reason: 'user' }, at(6))).to.throw(/is paused \(budget\): a budget is used up; \/task resume is refused until the user raises it \(the refusal names the budget and its setting\)\.$/)
  })

  it('pause records reason and resume phase; resume returns there', () => {
    const active = approve(applyPlanReview(reviewingPlan(), { jobId: 'p1', verdict: 'pass', findings: [] }, at(3)), at(4))
    const paused = pause(active, { reason: 'user' }, at(5))
    expect(paused).to.include({ phase: 'paused', pauseReason: 'user', resumePhase: 'active', revision: 5 })
    refuses('TASK_NOT_EXECUTING', () => pause(paused, { reason: 'user' }, at(6)))
    const resumed = resume(paused, {}, at(6))
    expect(resumed).to.include({ phase: 'active', revision: 6 })
    expect(resumed).not.to.have.any.keys('pauseReason', 'resumePhase')
    refuses('TASK_NOT_EXECUTING', () => resume(resumed, {}, at(7)))
  })

  it('resume into an interrupted review can name a new review job', () => {
    const paused = pause(reviewingPlan('p1'), { reason: 'review-fault' }, at(3))
    const resumed = resume(paused, { reviewJobId: 'p1-retry' }, at(4))
    expect(resumed.phase).to.equal('reviewing')
    expect(resumed.pendingReview).to.deep.equal({ kind: 'plan', jobId: 'p1-retry', forRevision: 4 })
    refuses('TASK_STALE', () => applyPlanReview(resumed, { jobId: 'p1', verdict: 'pass', findings: [] }, at(5)))
    expect(applyPlanReview(resumed, { jobId: 'p1-retry', verdict: 'pass', findings: [] }, at(5)).phase).to.equal('awaiting-approval')
  })

  it('resumeTarget derives the phase for records that predate resumePhase, without writing it back', () => {
    const legacy: Task = { id: 'L', revision: 3, objective: 'o', phase: 'paused', enabled: true, nodeRuns: { a: { attempt: 1, status: 'passed' } } }
    expect(resumeTarget(legacy)).to.equal('active')
    expect(resumeTarget({ ...legacy, nodeRuns: {} })).to.equal('planning')
    expect(legacy).not.to.have.property('resumePhase')
  })

  it('resume refuses while supervision is off', () => {
    const paused = pause(planning(), { reason: 'user' }, at(2))
    refuses('SUPERVISOR_DISABLED', () => resume(setEnabled(paused, { enabled: false }, at(3)), {}, at(4)))
  })

  it('clear is terminal; a cleared task refuses further changes', () => {
    const cleared = clear(reviewingPlan(), at(3))
    expect(cleared).to.include({ phase: 'cleared', revision: 3 })
    expect(cleared).not.to.have.property('pendingReview')
    refuses('TASK_NOT_EXECUTING', () => clear(cleared, at(4)))
    refuses('TASK_NOT_EXECUTING', () => edit(cleared, { objective: 'x' }, at(4)))
    refuses('TASK_NOT_FOUND', () => clear(undefined, at(4)))
  })

  it('setEnabled toggles supervision with a new revision; the same setting changes nothing', () => {
    const task = planning()
    const off = setEnabled(task, { enabled: false }, at(2))
    expect(off).to.include({ enabled: false, revision: 2 })
    expect(setEnabled(off, { enabled: false }, at(3))).to.equal(off)
    expect(setEnabled(off, { enabled: true }, at(3))).to.include({ enabled: true, revision: 3 })
  })

  it('transitions never mutate their input and add exactly one revision', () => {
    const task = reviewingPlan()
    const snapshot = structuredClone(task)
    const next = applyPlanReview(task, { jobId: 'p1', verdict: 'revise', findings: ['x'] }, at(3))
    expect(task).to.deep.equal(snapshot)
    expect(next.revision).to.equal(task.revision + 1)
  })

  it('assertBinding refuses another task or revision with TASK_STALE', () => {
    const task = planning()
    expect(assertBinding(task, { taskId: 'T1', revision: 1 })).to.equal(task)
    expect(refuses('TASK_STALE', () => assertBinding(task, { taskId: 'T1', revision: 2 })).message).to.match(/revision 1/)
    refuses('TASK_STALE', () => assertBinding(task, { taskId: 'T0', revision: 1 }))
    refuses('TASK_STALE', () => assertBinding(undefined, { taskId: 'T1', revision: 1 }))
  })
})


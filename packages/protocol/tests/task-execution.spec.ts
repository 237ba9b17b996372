import { expect } from 'chai'
import {
  applyCompletionReview, applyStageReview, newTask, pause, reportStage, requestCompletion, resume, reworkNode, setEnabled, startNode,
  type Task,
} from '../src/task'
import { Driver, refuses } from './fixtures/task'

const at = (seq: number) => ({ seq, time: 9000 + seq })

function active(): Task {
  return new Driver().start('X')
}

function reviewingStage(nodeId = 'a', jobId = 's1'): Task {
  return reportStage(startNode(active(), { nodeId }, at(10)), { nodeId, jobId }, at(11))
}

function allPassed(): Task {
  const driver = new Driver()
  driver.start('X')
  return driver.passAll()
}

describe('task transitions: execution', () => {
  it('startNode runs a ready node only', () => {
    const task = active()
    const started = startNode(task, { nodeId: 'a' }, at(10))
    expect(started.nodeRuns.a.status).to.equal('running')
    expect(started.revision).to.equal(task.revision + 1)
    const blocked = refuses('TASK_NOT_EXECUTING', () => startNode(task, { nodeId: 'd' }, at(10)))
    expect(blocked.message).to.match(/dependencies "b", "c" have not passed/)
    expect(blocked.message).to.match(/Ready nodes: a, e/)
    expect(refuses('TASK_NOT_EXECUTING', () => startNode(started, { nodeId: 'a' }, at(11))).message).to.match(/it is running/)
    refuses('TASK_INVALID', () => startNode(task, { nodeId: 'zz' }, at(10)))
  })

  it('execution refuses when not executing, disabled, or without a task', () => {
    const driver = new Driver()
    driver.step((t, a) => newTask(t, { objective: 'o' }, a), 'P')
    refuses('TASK_NOT_EXECUTING', () => startNode(driver.task, { nodeId: 'a' }, at(10)))
    refuses('TASK_NOT_FOUND', () => startNode(undefined, { nodeId: 'a' }, at(10)))
    refuses('SUPERVISOR_DISABLED', () => startNode(setEnabled(active(), { enabled: false }, at(9)), { nodeId: 'a' }, at(10)))
    refuses('TASK_NOT_EXECUTING', () => startNode(pause(active(), { reason: 'user' }, at(9)), { nodeId: 'a' }, at(10)))
    refuses('TASK_NOT_EXECUTING', () => startNode(reviewingStage(), { nodeId: 'e' }, at(12)))
  })

  it('reportStage: running node → reviewing with a pending stage review', () => {
    const task = reviewingStage('a', 's1')
    expect(task.phase).to.equal('reviewing')
    expect(task.nodeRuns.a.status).to.equal('reviewing')
    expect(task.pendingReview).to.deep.equal({ kind: 'stage', jobId: 's1', nodeId: 'a', forRevision: task.revision })
    refuses('TASK_NOT_EXECUTING', () => reportStage(active(), { nodeId: 'a', jobId: 's' }, at(10)))
  })

  it('applyStageReview: pass → passed, revise → needs-revision, needs-user → awaiting-user and paused', () => {
    const passed = applyStageReview(reviewingStage(), { jobId: 's1', verdict: 'pass', findings: [] }, at(12))
    expect(passed.phase).to.equal('active')
    expect(passed.nodeRuns.a).to.deep.include({ status: 'passed', attempt: 1 })
    expect(passed).not.to.have.property('pendingReview')
    const revise = applyStageReview(reviewingStage(), { jobId: 's1', verdict: 'revise', findings: ['missing test'] }, at(12))
    expect(revise.nodeRuns.a.status).to.equal('needs-revision')
    expect(revise.nodeRuns.a.review).to.deep.equal({ jobId: 's1', verdict: 'revise', findings: ['missing test'] })
    expect(startNode(revise, { nodeId: 'a' }, at(13)).nodeRuns.a.status).to.equal('running')
    const asked = applyStageReview(reviewingStage(), { jobId: 's1', verdict: 'needs-user', findings: ['?'] }, at(12))
    expect(asked).to.include({ phase: 'paused', pauseReason: 'decision', resumePhase: 'active' })
    expect(asked.nodeRuns.a.status).to.equal('awaiting-user')
    const resumed = resume(asked, {}, at(13))
    expect(resumed.nodeRuns.a.status).to.equal('needs-revision')
    refuses('TASK_STALE', () => applyStageReview(reviewingStage(), { jobId: 'other', verdict: 'pass', findings: [] }, at(12)))
  })

  it('reworkNode: the node and its descendants get attempt+1 pending, shared descendants once, prior acceptance kept', () => {
    const task = allPassed()
    const reworked = reworkNode(task, { nodeId: 'a', reason: 'schema was wrong' }, at(50))
    for (const id of ['a', 'b', 'c', 'd']) {
      expect(reworked.nodeRuns[id]).to.deep.include({ attempt: 2, status: 'pending', evidenceAfterSeq: 50, reworkReason: 'schema was wrong' })
      expect(reworked.nodeRuns[id].priorAcceptance).to.deep.equal({ attempt: 1, jobId: task.nodeRuns[id].review!.jobId })
    }
    expect(reworked.nodeRuns.e).to.deep.equal(task.nodeRuns.e)
    expect(reworked.revision).to.equal(task.revision + 1)
    refuses('TASK_INVALID', () => reworkNode(active(), { nodeId: 'a', reason: 'x' }, at(10)))
    refuses('TASK_INVALID', () => reworkNode(task, { nodeId: 'a', reason: ' ' }, at(10)))
  })

  it('requestCompletion only when every node passed', () => {
    const error = refuses('TASK_NOT_COMPLETE', () => requestCompletion(active(), { jobId: 'c1' }, at(10)))
    expect(error.message).to.match(/"a", "b", "c", "d", "e" have not passed/)
    const reviewing = requestCompletion(allPassed(), { jobId: 'c1' }, at(60))
    expect(reviewing.phase).to.equal('reviewing')
    expect(reviewing.pendingReview).to.deep.equal({ kind: 'completion', jobId: 'c1', forRevision: reviewing.revision })
  })

  it('applyCompletionReview: pass → complete with completedAt; revise → active with findings kept', () => {
    const reviewing = requestCompletion(allPassed(), { jobId: 'c1' }, at(60))
    const done = applyCompletionReview(reviewing, { jobId: 'c1', verdict: 'pass', findings: [], evidenceSeqs: [3, 4], cutoffSeq: 61 }, at(62))
    expect(done).to.include({ phase: 'complete', completedAt: 9062 })
    expect(done.completionReview).to.deep.equal({ jobId: 'c1', verdict: 'pass', findings: [], evidenceSeqs: [3, 4], cutoffSeq: 61 })
    const revised = applyCompletionReview(reviewing, { jobId: 'c1', verdict: 'revise', findings: ['docs stale'], evidenceSeqs: [], cutoffSeq: 61 }, at(62))
    expect(revised.phase).to.equal('active')
    expect(revised).not.to.have.property('completedAt')
    expect(revised.completionReview!.findings).to.deep.equal(['docs stale'])
    const asked = applyCompletionReview(reviewing, { jobId: 'c1', verdict: 'needs-user', findings: ['ok?'], evidenceSeqs: [], cutoffSeq: 61 }, at(62))
    expect(asked).to.include({ phase: 'paused', pauseReason: 'decision' })
    refuses('TASK_STALE', () => applyCompletionReview(reviewing, { jobId: 'c0', verdict: 'pass', findings: [], evidenceSeqs: [], cutoffSeq: 1 }, at(62)))
  })

  it('every execution transition on a complete task answers TASK_COMPLETED', () => {
    const driver = new Driver()
    driver.start('C')
    const done = driver.complete()
    refuses('TASK_COMPLETED', () => startNode(done, { nodeId: 'a' }, at(99)))
    refuses('TASK_COMPLETED', () => reportStage(done, { nodeId: 'a', jobId: 'j' }, at(99)))
    refuses('TASK_COMPLETED', () => reworkNode(done, { nodeId: 'a', reason: 'bug' }, at(99)))
    refuses('TASK_COMPLETED', () => requestCompletion(done, { jobId: 'j' }, at(99)))
    refuses('TASK_COMPLETED', () => applyStageReview(done, { jobId: 'j', verdict: 'pass', findings: [] }, at(99)))
  })
})

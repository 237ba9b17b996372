import { expect } from 'chai'
import {
  applyCompletionReview, applyPlanReview, applyStageReview, approve, clear, edit, newTask, pause, reportStage, requestCompletion,
  resume, reworkNode, setEnabled, startNode, submitPlan, transitionKind, TRANSITION_KINDS, type Task, type TransitionKind,
} from '../src/task'
import { DIAMOND, Driver } from './fixtures/task'

const at = (seq: number, id?: string) => ({ seq, time: 5000 + seq, ...(id ? { id } : {}) })
const SMALL = { acceptanceCriteria: ['works'], nodes: [{ id: 'a', title: 'only step' }] }

/** Apply `fn` and answer the kind of the change it made. */
function kindOf(previous: Task | undefined, fn: (task: Task | undefined) => Task): [TransitionKind, Task] {
  const next = fn(previous)
  return [transitionKind(previous, next), next]
}

describe('task transitions: transitionKind', () => {
  it('names every step of a task from creation to completion', () => {
    const kinds: TransitionKind[] = []
    let task: Task | undefined
    const step = (fn: (t: Task | undefined) => Task) => {
      const [kind, next] = kindOf(task, fn)
      kinds.push(kind)
      task = next
    }
    step((t) => newTask(t, { objective: 'build' }, at(1, 'T1')))
    step((t) => submitPlan(t, { plan: SMALL, jobId: 'p1' }, at(2)))
    step((t) => applyPlanReview(t, { jobId: 'p1', verdict: 'revise', findings: ['tests?'] }, at(3)))
    step((t) => submitPlan(t, { plan: SMALL, jobId: 'p2' }, at(4)))
    step((t) => applyPlanReview(t, { jobId: 'p2', verdict: 'pass', findings: [] }, at(5)))
    step((t) => approve(t, at(6)))
    step((t) => startNode(t, { nodeId: 'a' }, at(7)))
    step((t) => reportStage(t, { nodeId: 'a', jobId: 's1' }, at(8)))
    step((t) => applyStageReview(t, { jobId: 's1', verdict: 'revise', findings: ['no test'] }, at(9)))
    step((t) => startNode(t, { nodeId: 'a' }, at(10)))
    step((t) => reportStage(t, { nodeId: 'a', jobId: 's2' }, at(11)))
    step((t) => applyStageReview(t, { jobId: 's2', verdict: 'pass', findings: [] }, at(12)))
    step((t) => requestCompletion(t, { jobId: 'c1' }, at(13)))
    step((t) => applyCompletionReview(t, { jobId: 'c1', verdict: 'revise', findings: ['docs'], evidenceSeqs: [13], cutoffSeq: 13 }, at(14)))
    step((t) => requestCompletion(t, { jobId: 'c2' }, at(15)))
    step((t) => applyCompletionReview(t, { jobId: 'c2', verdict: 'pass', findings: [], evidenceSeqs: [15], cutoffSeq: 15 }, at(16)))
    expect(kinds).to.deep.equal([
      'created', 'review-requested', 'revised', 'review-requested', 'reviewed', 'approved', 'node-started', 'review-requested',
      'revised', 'node-started', 'review-requested', 'reviewed', 'review-requested', 'revised', 'review-requested', 'completed',
    ])
  })

  it('names control transitions: pause, resume, on/off, edit, clear, rework', () => {
    const planning = newTask(undefined, { objective: 'build' }, at(1, 'T1'))
    const [paused, pausedTask] = kindOf(planning, (t) => pause(t, { reason: 'user' }, at(2)))
    expect(paused).to.equal('paused')
    expect(kindOf(pausedTask, (t) => resume(t, {}, at(3)))[0]).to.equal('resumed')
    expect(kindOf(planning, (t) => setEnabled(t, { enabled: false }, at(2)))[0]).to.equal('disabled')
    const off = setEnabled(planning, { enabled: false }, at(2))
    expect(kindOf(off, (t) => setEnabled(t, { enabled: true }, at(3)))[0]).to.equal('enabled')
    expect(kindOf(planning, (t) => edit(t, { objective: 'build better' }, at(2)))[0]).to.equal('edited')
    expect(kindOf(planning, (t) => clear(t, at(2)))[0]).to.equal('cleared')
    // A paused task that is cleared is `cleared`, not `resumed`.
    expect(kindOf(pausedTask, (t) => clear(t, at(3)))[0]).to.equal('cleared')

    const driver = new Driver()
    driver.start('T2', 'diamond', DIAMOND)
    driver.step((t, a) => startNode(t, { nodeId: 'a' }, a))
    driver.step((t, a) => reportStage(t, { nodeId: 'a', jobId: 'sa' }, a))
    const passed = driver.step((t, a) => applyStageReview(t, { jobId: 'sa', verdict: 'pass', findings: [] }, a))
    expect(kindOf(passed, (t) => reworkNode(t, { nodeId: 'a', reason: 'rude' }, at(99)))[0]).to.equal('reworked')
  })

  it('names a repair reopen `reopened` and a new task after a terminal one `created`', () => {
    const driver = new Driver()
    driver.start('T3')
    const complete = driver.complete()
    const proposal = driver.propose('r1', ['b'])
    expect(transitionKind(complete, driver.reopen(proposal))).to.equal('reopened')
    const cleared = clear(newTask(undefined, { objective: 'x' }, at(1, 'T4')), at(2))
    expect(transitionKind(cleared, newTask(cleared, { objective: 'y' }, at(3, 'T5')))).to.equal('created')
    expect(TRANSITION_KINDS).to.include.members(['created', 'approved', 'completed', 'reopened', 'paused', 'resumed', 'cleared', 'revised'])
  })
})

import { expect } from 'chai'
import { milestoneTaskOf, repairMilestone, taskMilestones, type MilestoneTask } from '@taskward/protocol'

describe('milestones (the conversation\'s cards)', () => {
  const plan = { nodes: [{ id: 'a' }, { id: 'b' }] }
  const task = (over: Partial<MilestoneTask>): MilestoneTask => ({ id: 't', phase: 'planning', nodeRuns: {}, plan, ...over })
  const kinds = (prev: MilestoneTask | undefined, next: MilestoneTask) => taskMilestones(prev, next).map((m) => m.kind)

  it('marks the plan waiting, nodes passed or sent back, completion, a pause with its reason and a reopen', () => {
    expect(taskMilestones(task({}), task({ phase: 'awaiting-approval' }))).to.deep.equal([{ kind: 'plan-waiting', text: 'The plan (2 nodes) waits for your approval.' }])
    const running = task({ phase: 'active', nodeRuns: { a: { status: 'reviewing', attempt: 1 } } })
    expect(kinds(running, task({ phase: 'active', nodeRuns: { a: { status: 'passed', attempt: 1 } } }))).to.deep.equal(['node-passed'])
    const sentBack = taskMilestones(running, task({ phase: 'active', nodeRuns: { a: { status: 'needs-revision', attempt: 1, review: { findings: ['a.txt is empty'] } } } }))
    expect(sentBack).to.deep.equal([{ kind: 'node-sent-back', text: 'Node a sent back for revision: a.txt is empty' }])
    const passed = { a: { status: 'passed' as const }, b: { status: 'passed' as const } }
    expect(kinds(task({ phase: 'reviewing', nodeRuns: passed }), task({ phase: 'complete', nodeRuns: passed }))).to.deep.equal(['complete'])
    expect(taskMilestones(task({ phase: 'active' }), task({ phase: 'paused', pauseReason: 'budget' }))[0]!.text).to.equal('Task paused: a budget is used up.')
    const reopened = task({ phase: 'active', acceptanceCycle: 2, reopenedFromProposalId: 'p', nodeRuns: { a: { status: 'pending', attempt: 2 }, b: { status: 'pending', attempt: 2 } } })
    expect(taskMilestones(task({ phase: 'complete', nodeRuns: passed }), reopened)).to.deep.equal([{ kind: 'reopened', text: 'Task reopened for acceptance cycle 2 by a confirmed repair.' }])
  })

  it('marks nothing twice and nothing for another task\'s state', () => {
    const done = task({ phase: 'complete', nodeRuns: { a: { status: 'passed' } } })
    expect(kinds(done, { ...done })).to.deep.equal([])
    expect(kinds(task({ id: 'other', phase: 'awaiting-approval' }), task({ phase: 'awaiting-approval' }))).to.deep.equal(['plan-waiting'])
    // A run that starts out needing revision (a reopened node) is not "sent back".
    expect(kinds(undefined, task({ phase: 'active', nodeRuns: { a: { status: 'needs-revision' } } }))).to.deep.equal([])
  })

  it('reads records defensively: only task states and repair proposals, never throwing on a bad shape', () => {
    expect(milestoneTaskOf({ namespace: 'dsh-task-supervisor', kind: 'state', payload: { id: 't', phase: 'active' } })).to.deep.include({ id: 't', nodeRuns: {} })
    for (const bad of [undefined, null, 'x', [], { namespace: 'other', kind: 'state', payload: { id: 't', phase: 'active' } }, { namespace: 'dsh-task-supervisor', kind: 'state', payload: { id: 3 } }]) {
      expect(milestoneTaskOf(bad)).to.equal(undefined)
      expect(repairMilestone(bad)).to.equal(undefined)
    }
    expect(repairMilestone({ namespace: 'dsh-task-supervisor-repair', kind: 'proposal', payload: { title: 'fix a' } })!.text).to.match(/^Repair proposed: "fix a"/)
    expect(repairMilestone({ namespace: 'dsh-task-supervisor-repair', kind: 'confirm', payload: {} })).to.equal(undefined)
  })
})

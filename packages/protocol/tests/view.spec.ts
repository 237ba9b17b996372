import { expect } from 'chai'
import {
  applySupervisorEvent, initSupervisorState, RECORD_EVENT_TYPE, taskStateEnvelope, type SessionEvent, type Task, type TaskPlan,
} from '@taskward/protocol'
import {
  adviceFor, dagLayers, impactNote, layoutDag, nodeStatusLabel, pauseReasonLabel, QUOTE_MAX, quoteEvent, repairOutcomeText, sessionView, STAMP_CAVEAT,
  stampText, taskActions, taskDetailView,
} from '@taskward/protocol'

const DIAMOND: TaskPlan = {
  acceptanceCriteria: ['works'],
  nodes: [
    { id: 'a', title: 'root' },
    { id: 'b', title: 'left', dependsOn: ['a'] },
    { id: 'c', title: 'right', dependsOn: ['a'] },
    { id: 'd', title: 'join', dependsOn: ['b', 'c'] },
    { id: 'e', title: 'after join' },
  ],
}

function task(overrides: Partial<Task> = {}): Task {
  return {
    id: 't1', revision: 9, objective: 'diamond', phase: 'complete', enabled: true, plan: DIAMOND, completedAt: 1000,
    nodeRuns: Object.fromEntries(DIAMOND.nodes.map((n) => [n.id, { attempt: 1, status: 'passed' as const }])),
    ...overrides,
  }
}

describe('console view: DAG layout', () => {
  it('puts each node in the column of its longest dependency path, implicit dependencies included', () => {
    expect(Object.fromEntries(dagLayers(DIAMOND))).to.deep.equal({ a: 0, b: 1, c: 1, d: 2, e: 3 })
  })

  it('lays columns left to right, centres short columns and draws one edge per dependency', () => {
    const layout = layoutDag(DIAMOND, { nodeWidth: 100, nodeHeight: 40, gapX: 20, gapY: 10, padding: 5 })
    const at = Object.fromEntries(layout.nodes.map((n) => [n.id, [n.x, n.y]]))
    expect(at).to.deep.equal({ a: [5, 30], b: [125, 5], c: [125, 55], d: [245, 30], e: [365, 30] })
    expect(layout.width).to.equal(5 * 2 + 4 * 100 + 3 * 20)
    expect(layout.height).to.equal(5 * 2 + 2 * 40 + 10)
    expect(layout.edges.map((e) => `${e.from}>${e.to}`)).to.deep.equal(['a>b', 'a>c', 'b>d', 'c>d', 'd>e'])
    expect(layout.edges[0].path).to.equal('M105 50 C115 50 115 25 125 25')
  })

  it('refuses a cyclic plan instead of looping', () => {
    expect(() => layoutDag({ acceptanceCriteria: [], nodes: [{ id: 'x', title: 'x', dependsOn: ['y'] }, { id: 'y', title: 'y', dependsOn: ['x'] }] }))
      .to.throw(/cycle/)
  })
})

describe('console view: task details', () => {
  it('shows an absent acceptance cycle as the implicit first cycle without inventing it', () => {
    const view = taskDetailView(task(), [], true)
    expect(view).to.include({ acceptanceCycle: 1, cycleRecorded: false, phase: 'complete', completedAt: 1000, isCurrent: true })
    expect(view.nodes.map((n) => [n.id, n.dependsOn])).to.deep.equal([['a', []], ['b', ['a']], ['c', ['a']], ['d', ['b', 'c']], ['e', ['d']]])
    const reopened = taskDetailView(task({ phase: 'active', acceptanceCycle: 3, completedAt: undefined }), [], false)
    expect(reopened).to.include({ acceptanceCycle: 3, cycleRecorded: true, isCurrent: false })
    expect(reopened).to.not.have.property('completedAt')
  })

  it('keeps only this task\'s reviews, with verdict, evidence seqs and reviewer session', () => {
    const job = (taskId: string, jobId: string) => ({
      jobId, taskId, taskRevision: 3, kind: 'stage' as const, nodeId: 'b', model: 'scripted', reviewerSessionId: `rev-${jobId}`,
      evidenceSeqs: [12, 14], cutoffSeq: 15, status: 'finished' as const, verdict: 'revise' as const, findings: ['missing test'],
    })
    const view = taskDetailView(task(), [job('t1', 'j1'), job('other', 'j2')], true)
    expect(view.reviews).to.deep.equal([{
      jobId: 'j1', kind: 'stage', nodeId: 'b', status: 'finished', verdict: 'revise', findings: ['missing test'],
      evidenceSeqs: [12, 14], reviewerSessionId: 'rev-j1', model: 'scripted', cutoffSeq: 15, taskRevision: 3,
    }])
  })

  it('lists earlier acceptance cycles with their runs in plan order', () => {
    const runs = { d: { attempt: 2, status: 'passed' as const }, a: { attempt: 1, status: 'passed' as const } }
    const view = taskDetailView(task({
      acceptanceCycle: 2,
      repairHistory: [{
        proposalId: 'p1', title: 'fix', reason: 'broken', rootNodeIds: ['b'], affectedNodeIds: ['b', 'd', 'e'], previousCycle: 1,
        previousRuns: runs, confirmedAt: 2000, confirmationSeq: 40,
      }],
    }), [], true)
    expect(view.repairHistory).to.have.length(1)
    expect(view.repairHistory[0]).to.include({ cycle: 1, proposalId: 'p1', confirmationSeq: 40 })
    expect(view.repairHistory[0]).to.not.have.property('completedAt')
    expect(view.repairHistory[0].runs.map((r) => r.id)).to.deep.equal(['a', 'd'])
  })
})

describe('console view: session and proposals', () => {
  it('quotes evidence events bounded to 500 characters, and says when one is missing', () => {
    const long: SessionEvent = { seq: 4, type: 'assistant/message', time: 1, data: { text: 'x'.repeat(900) } }
    expect(quoteEvent(long, 4).text).to.have.length(QUOTE_MAX)
    const result: SessionEvent = { seq: 5, type: 'tool/result', time: 1, data: { callId: 'c', name: 'read', result: { content: 'hi' } } }
    expect(quoteEvent(result, 5)).to.deep.equal({ seq: 5, type: 'tool/result', text: 'read: {"content":"hi"}' })
    const failed: SessionEvent = { seq: 6, type: 'tool/result', time: 1, data: { callId: 'c', name: 'write', error: { code: 'X', message: 'no' } } }
    expect(quoteEvent(failed, 6).text).to.equal('write: error X: no')
    expect(quoteEvent(undefined, 7)).to.deep.equal({ seq: 7, text: 'This event is not in the session log.' })
  })

  it('builds the session view from a folded log: current task, history newest first, no proposal waiting', () => {
    let state = initSupervisorState()
    let seq = 0
    const fold = (t: Task) => { state = applySupervisorEvent(state, { seq: seq++, type: RECORD_EVENT_TYPE, time: 1, data: taskStateEnvelope(t) }) }
    fold({ id: 'old', revision: 1, objective: 'old one', phase: 'planning', enabled: true, nodeRuns: {} })
    fold({ id: 'old', revision: 2, objective: 'old one', phase: 'cleared', enabled: true, nodeRuns: {} })
    fold({ id: 'new', revision: 1, objective: 'new one', phase: 'planning', enabled: true, nodeRuns: {} })
    expect(state.poisoned).to.equal(undefined)
    const view = sessionView({ id: 's', cwd: '/w', role: 'main', createdAt: 0, seq }, state, new Map())
    expect(view.current).to.include({ id: 'new', phase: 'planning', isCurrent: true })
    expect(view.history.map((t) => [t.id, t.phase, t.isCurrent])).to.deep.equal([['old', 'cleared', false]])
    expect(view).to.not.have.property('awaitingDecision')
    expect(view.proposals).to.deep.equal([])
  })

  it('advises by code, never by message', () => {
    expect(adviceFor('ARTIFACT_CHANGED')).to.match(/^Files changed since the proposal; propose again/)
    expect(adviceFor('REPAIR_STALE')).to.match(/reload/)
    expect(adviceFor('ACTIVE_TASK_CONFLICT')).to.match(/Another task is active/)
    expect(adviceFor('SOMETHING_NEW')).to.match(/read its message/)
  })

  it('carries the labels both renderers show: phase, pause reason with what to do, node status', () => {
    const paused = taskDetailView(task({ phase: 'paused', pauseReason: 'budget', completedAt: undefined }), [], true)
    expect(paused.phaseLabel).to.equal('Paused')
    expect(paused.pauseReasonLabel).to.equal('a budget is used up; raise it, then /task resume')
    expect(paused.nodes.map((n) => n.statusLabel)).to.deep.equal(paused.nodes.map((n) => nodeStatusLabel(n.status)))
    expect(nodeStatusLabel(undefined)).to.equal('not started')
    expect(nodeStatusLabel('awaiting-user')).to.equal('awaiting your decision')
    expect(pauseReasonLabel('user')).to.equal('paused by the user; /task resume continues it')
    // A complete task keeps no pause label even if an old record carried a reason.
    expect(taskDetailView(task({ pauseReason: 'user' }), [], true)).to.not.have.property('pauseReasonLabel')
  })

  describe('actions allowed now', () => {
    const base: Task = { id: 't', revision: 4, objective: 'o', phase: 'planning', enabled: true, nodeRuns: {} }
    const ids = (t: Task | undefined, options = {}) => taskActions(t, options).map((a) => a.id)

    it('binds every command to the task revision the view shows', () => {
      const approve = taskActions({ ...base, phase: 'awaiting-approval' }).find((a) => a.id === 'approve')
      expect(approve).to.deep.equal({ id: 'approve', label: 'Approve plan', command: '/task approve t@4' })
    })

    it('follows the phase', () => {
      expect(ids({ ...base, phase: 'planning' })).to.deep.equal(['pause', 'consult'])
      expect(ids({ ...base, phase: 'awaiting-approval' })).to.deep.equal(['approve', 'pause', 'consult'])
      expect(ids({ ...base, phase: 'active' })).to.deep.equal(['pause', 'consult'])
      expect(ids({ ...base, phase: 'active' }, { controller: { awaitingManualResume: true } })).to.deep.equal(['resume', 'pause', 'consult'])
      expect(ids({ ...base, phase: 'paused', pauseReason: 'user' })).to.deep.equal(['resume', 'consult'])
      expect(ids({ ...base, phase: 'complete' })).to.deep.equal(['consult', 'propose-repair'])
      expect(ids({ ...base, phase: 'cleared' })).to.deep.equal([])
      expect(ids(undefined)).to.deep.equal([])
    })

    it('offers the decision while a proposal waits, and no second proposal', () => {
      const actions = taskActions({ ...base, phase: 'complete' }, { awaitingDecision: 'p1' })
      expect(actions.map((a) => [a.id, a.proposalId])).to.deep.equal([['confirm', 'p1'], ['decline', 'p1'], ['consult', undefined]])
    })

    it('offers nothing but the decision on a poisoned session, and no approval or repair with supervision off', () => {
      expect(ids({ ...base, phase: 'awaiting-approval' }, { poisoned: true })).to.deep.equal([])
      expect(ids({ ...base, phase: 'awaiting-approval', enabled: false })).to.deep.equal(['pause', 'consult'])
      expect(ids({ ...base, phase: 'complete', enabled: false })).to.deep.equal(['consult'])
    })

    it('comes with the session view', () => {
      let state = initSupervisorState()
      state = applySupervisorEvent(state, { seq: 0, type: RECORD_EVENT_TYPE, time: 1, data: taskStateEnvelope({ ...base, revision: 1 }) })
      state = applySupervisorEvent(state, { seq: 1, type: RECORD_EVENT_TYPE, time: 2, data: taskStateEnvelope({ ...base, revision: 2, phase: 'paused', pauseReason: 'user', resumePhase: 'planning' }) })
      expect(state.poisoned).to.equal(undefined)
      expect(sessionView({ id: 's', cwd: '/w', role: 'main', createdAt: 0, seq: 1 }, state, new Map()).actions.map((a) => a.id)).to.deep.equal(['resume', 'consult'])
    })
  })
})

describe('console view: the impact panel\'s words (one place for the console and the DSH panel)', () => {
  const proposal = (taskId: string) => ({
    id: 'p1', taskId, taskRevision: 9, source: 'user' as const, title: 'fix', reason: 'broken', rootNodeIds: ['b'], affectedNodeIds: ['b', 'd'],
    evidenceSeqs: [], proposedAt: 1, proposedSeq: 3,
    artifact: { workspaceKey: 'k', digest: 'd'.repeat(64), files: 912, bytes: 3 * 1024 * 1024, links: 3, dependencies: { entries: 950, files: 900, bytes: 2 * 1024 * 1024, links: 1 } },
  })

  it('carries the stamp with link counts, the note for the task\'s next cycle and the stamp\'s caveat', () => {
    const state = { ...initSupervisorState(), current: task({ acceptanceCycle: 2 }), proposals: [{ proposal: proposal('t1'), status: 'pending' as const }] }
    const [view] = sessionView({ id: 's', cwd: '/w', role: 'main', createdAt: 0, seq: 4 }, state, new Map()).proposals
    expect(view!.text.stamp).to.equal('12 files, 1.0 MiB, 2 links; dependencies: 900 files, 2.0 MiB, 1 link')
    expect(view!.text.note).to.equal(impactNote('t1', 2))
    expect(view!.text.note).to.match(/acceptance cycle 3: /).and.to.include(STAMP_CAVEAT)
    expect(STAMP_CAVEAT).to.include('does not prove that the earlier implementation is correct')
    expect(stampText({ own: { files: 1, bytes: 10, links: 0 } })).to.equal('1 file, 10 B')
  })

  it('says what a repair click did for every outcome the route answers', () => {
    expect(repairOutcomeText({ outcome: 'reopened', taskId: 't1', revision: 10, acceptanceCycle: 2, affectedNodeIds: ['b', 'd'] }))
      .to.equal('Reopened: task t1 is in acceptance cycle 2 (revision 10). Affected nodes b, d wait for a new attempt; the agent continues.')
    expect(repairOutcomeText({ outcome: 'identical-pending' })).to.equal('The same repair is already waiting for a decision; nothing new was recorded.')
    expect(repairOutcomeText({ outcome: 'already-declined' })).to.equal(repairOutcomeText({ outcome: 'declined' })).and.to.match(/^Declined: the task stays complete\./)
    expect(repairOutcomeText({ outcome: 'already-applied', taskId: 't1', acceptanceCycle: 2 })).to.match(/already applied.*Nothing more happened\.$/)
    expect(repairOutcomeText({ outcome: 'proposed' })).to.match(/^Proposed: /)
  })
})

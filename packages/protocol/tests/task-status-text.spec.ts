import { expect } from 'chai'
import { taskStatusText, type StatusTextInput } from '@taskward/protocol'

/* `/task status` in words: one derivation for our host's `statusText` and the text DSH shows. */
describe('protocol: /task status as text', () => {
  const base = (over: Partial<StatusTextInput> = {}): StatusTextInput => ({
    task: { id: 't1', revision: 4, objective: 'Write a.txt and b.txt', phase: 'active', enabled: true, acceptanceCycle: 1, repairs: 0 },
    nodes: [
      { id: 'a', title: 'write a', dependsOn: [], attempt: 1, status: 'passed' },
      { id: 'b', title: 'write b', dependsOn: ['a'], attempt: 2, status: 'running' },
      { id: 'c', title: 'write c', dependsOn: ['b'], attempt: 1, status: 'pending' },
    ],
    readyNodes: [],
    proposals: [],
    history: [],
    availableActions: ['task_report_stage', 'task_rework_node'],
    controller: { armed: true, awaitingManualResume: false, continuationsLeft: 40 },
    ...over,
  })

  it('names the task, the phase, every node with its status, and what is next', () => {
    expect(taskStatusText(base())).to.equal([
      'Task t1 (revision 4): Write a.txt and b.txt',
      'Phase: active — the agent works through the plan',
      'Nodes:',
      '  a: write a — passed',
      '  b: write b (after a) — running, attempt 2',
      '  c: write c (after b) — pending',
      'Next: the agent finishes node b and reports it for review (task_report_stage).',
      'The whole status as JSON: /task status --json',
    ].join('\n'))
  })

  it('says what waits for the user: approval, a paused task\'s reason, a restart, a repair decision', () => {
    const approval = taskStatusText(base({ task: { ...base().task!, phase: 'awaiting-approval' }, nodes: base().nodes.map(({ id, title, dependsOn }) => ({ id, title, dependsOn })) }))
    expect(approval).to.include('Phase: awaiting approval').and.include('  a: write a — not started')
      .and.include('Next: nothing runs until you act.').and.include('Waiting for you: approve the plan with /task approve')
    const paused = taskStatusText(base({ task: { ...base().task!, phase: 'paused', pauseReason: 'budget' } }))
    expect(paused).to.include('Phase: paused — a budget is used up').and.include('Waiting for you: raise the budget')
    const decision = taskStatusText(base({ task: { ...base().task!, phase: 'paused', pauseReason: 'decision' } }))
    expect(decision).to.include('a reviewer asked for your decision').and.include('read the reviewer\'s findings, then /task resume')
    const restarted = taskStatusText(base({ controller: { armed: false, awaitingManualResume: true } }))
    expect(restarted).to.include('Next: nothing runs until you act.').and.include('Waiting for you: /task resume continues it')
    const repair = taskStatusText(base({
      task: { ...base().task!, phase: 'complete', acceptanceCycle: 2, repairs: 1 },
      awaitingDecision: { id: 'p1', title: 'redo a', link: '/taskward/sessions/s1#impact' },
    }))
    expect(repair).to.include('(revision 4, acceptance cycle 2)').and.include('Phase: complete (after 1 confirmed repair)')
      .and.include('Waiting for you: the repair proposal "redo a" waits for your decision: confirm or decline it at /taskward/sessions/s1#impact')
  })

  it('reviews, no task, a poisoned log and supervision off', () => {
    expect(taskStatusText(base({ task: { ...base().task!, phase: 'reviewing' }, pendingReview: { kind: 'stage', jobId: 'j', nodeId: 'b', forRevision: 4 } })))
      .to.include('Phase: reviewing — the stage review of node b runs').and.include('Next: the stage review of node b runs; the task goes on after its verdict.')
    expect(taskStatusText({ nodes: [], readyNodes: [], proposals: [], history: [], availableActions: ['await-new-task'] }))
      .to.include('No task in this session.').and.include('Waiting for you: start a task with /task new <objective>.')
    const poisoned = taskStatusText(base({ poisoned: { seq: 12, message: 'Supervisor record at seq 12: bad' }, blockedReason: 'Supervisor record at seq 12: bad. Execution is blocked' }))
    expect(poisoned).to.include('Blocked: Supervisor record at seq 12').and.include('Waiting for you: a person must inspect the session log')
    expect(taskStatusText(base({ task: { ...base().task!, enabled: false } }))).to.include('(supervision off)').and.include('/task on turns it back on')
  })
})

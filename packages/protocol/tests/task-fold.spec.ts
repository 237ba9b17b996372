import { expect } from 'chai'
import {
  applySupervisorEvent, clear, foldSupervisorEvents, initSupervisorState, isExecutionBlocked, newTask, reviewJobEnvelope,
  REVIEW_WINDOW, startNode, taskStateEnvelope, type ReviewJob, type SupervisorState, type Task,
} from '../src/task'
import { Driver, Log } from './fixtures/task'

const fold = (log: Log) => foldSupervisorEvents(log.events)

function expectPoison(state: SupervisorState, seq: number, pattern: RegExp) {
  expect(state.poisoned, 'projection should be poisoned').to.not.equal(undefined)
  expect(state.poisoned!.seq).to.equal(seq)
  expect(state.poisoned!.message).to.match(new RegExp(`^Supervisor record at seq ${seq}: `))
  expect(state.poisoned!.message).to.match(pattern)
  expect(isExecutionBlocked(state)).to.equal(true)
}

const job = (jobId: string, status: ReviewJob['status'] = 'requested'): ReviewJob => ({
  jobId, taskId: 'T', taskRevision: 2, kind: 'plan', model: 'scripted', reviewerSessionId: 'rev', evidenceSeqs: [], cutoffSeq: 1,
  status, ...(status === 'finished' ? { verdict: 'pass' as const, findings: [] } : {}),
})

describe('supervisor projection fold', () => {
  it('folds a full lifecycle to the controller\'s task', () => {
    const driver = new Driver()
    driver.log.append('user/message', { text: '/task new build' })
    driver.start('T')
    const done = driver.complete()
    const state = fold(driver.log)
    expect(state.current).to.deep.equal(done)
    expect(state.current!.phase).to.equal('complete')
    expect(state.history).to.deep.equal([])
    expect(state.poisoned).to.equal(undefined)
    expect(state.asOfSeq).to.equal(driver.log.events.length - 1)
    expect(isExecutionBlocked(state)).to.equal(false)
  })

  it('is deterministic: folding the same events twice gives deep-equal states', () => {
    const driver = new Driver()
    driver.start('T')
    driver.complete()
    driver.reopen(driver.propose('p1', ['b']))
    expect(fold(driver.log)).to.deep.equal(fold(driver.log))
  })

  it('never mutates the state it is given', () => {
    const driver = new Driver()
    driver.start('T')
    const before = fold(driver.log)
    const snapshot = structuredClone(before)
    const next = driver.step((t, at) => startNode(t, { nodeId: 'a' }, at))
    const after = applySupervisorEvent(before, driver.log.events.at(-1)!)
    expect(before).to.deep.equal(snapshot)
    expect(after.current).to.deep.equal(next)
  })

  it('ignores other event types and other namespaces', () => {
    const log = new Log()
    log.append('tool/call', { name: 'read' })
    log.record({ namespace: 'someone-else', schemaVersion: 99, kind: 'x', recordId: 'r', payload: {} })
    log.append('extension/record', 'not an envelope')
    const state = fold(log)
    expect(state).to.deep.equal({ ...initSupervisorState(), asOfSeq: 2 })
  })

  it('moves a terminal task to history when a new task starts; history unique by id', () => {
    const driver = new Driver()
    driver.start('T1')
    const done = driver.complete()
    driver.step((t, at) => newTask(t, { objective: 'next' }, at), 'T2')
    const cleared = driver.step((t, at) => clear(t, at))
    driver.step((t, at) => newTask(t, { objective: 'third' }, at), 'T3')
    const state = fold(driver.log)
    expect(state.current!.id).to.equal('T3')
    expect(state.history).to.deep.equal([done, cleared])
  })

  it('keeps the last 50 review jobs, latest record per job', () => {
    const log = new Log()
    for (let i = 0; i < REVIEW_WINDOW + 5; i++) log.record(reviewJobEnvelope(job(`j${i}`), `r${i}`))
    log.record(reviewJobEnvelope(job('j54', 'finished'), 'r-final'))
    const state = fold(log)
    expect(state.reviews).to.have.length(REVIEW_WINDOW)
    expect(state.reviews[0].jobId).to.equal('j5')
    expect(state.reviews.at(-1)).to.deep.include({ jobId: 'j54', status: 'finished', verdict: 'pass' })
  })

  describe('poisons on forged or invalid records', () => {
    it('a live transition that writes repair fields (cycle, history, reopened-from) outside a confirmed repair', () => {
      for (const patch of [{ acceptanceCycle: 2 }, { repairHistory: [] }, { reopenedFromProposalId: 'p-forged' }]) {
        const driver = new Driver()
        driver.start('T')
        const forged: Task = { ...driver.task!, ...patch, revision: driver.task!.revision + 1 }
        const seq = driver.log.record(taskStateEnvelope(forged)).seq
        expectPoison(fold(driver.log), seq, new RegExp(`changed ${Object.keys(patch)[0]} outside a confirmed repair`))
      }
    })

    it('a skipped revision', () => {
      const driver = new Driver()
      driver.start('T')
      const forged: Task = { ...driver.task!, revision: driver.task!.revision + 2 }
      const seq = driver.log.record(taskStateEnvelope(forged)).seq
      expectPoison(fold(driver.log), seq, /went from revision 4 to 6/)
    })

    it('a first revision other than 1', () => {
      const log = new Log()
      const seq = log.record(taskStateEnvelope({ id: 'T', revision: 2, objective: 'o', phase: 'planning', enabled: true, nodeRuns: {} })).seq
      expectPoison(fold(log), seq, /starts at revision 2, not 1/)
    })

    it('a new task while the current one is live', () => {
      const driver = new Driver()
      driver.start('T')
      const seq = driver.log.record(taskStateEnvelope({ id: 'U', revision: 1, objective: 'o', phase: 'planning', enabled: true, nodeRuns: {} })).seq
      expectPoison(fold(driver.log), seq, /cannot take over while task T is active/)
    })

    it('a record the reader cannot read, and every later event is ignored', () => {
      const driver = new Driver()
      driver.start('T')
      const seq = driver.log.record({ namespace: 'dsh-task-supervisor', schemaVersion: 12, kind: 'state', recordId: 'x', payload: {} }).seq
      driver.step((t, at) => startNode(t, { nodeId: 'a' }, at))
      const state = fold(driver.log)
      expectPoison(state, seq, /outside 1\.\.11/)
      expect(state.current!.nodeRuns.a.status).to.equal('pending')
      expect(state.asOfSeq).to.equal(seq + 1)
    })

    it('a cycle made by one changed dependency of the same plan (the plan is validated again when it changes)', () => {
      const driver = new Driver()
      const task = driver.start('T')
      const nodes = task.plan!.nodes.map((node) => node.id === 'a' ? { ...node, dependsOn: ['d'] } : node)
      const seq = driver.log.record(taskStateEnvelope({ ...task, revision: task.revision + 1, plan: { ...task.plan!, nodes } })).seq
      expectPoison(fold(driver.log), seq, /invalid plan: .*cycle/)
    })

    it('a plan with a cycle or runs that do not match the plan', () => {
      const driver = new Driver()
      const task = driver.start('T')
      const cyclic = { ...task, revision: 5, plan: { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'x', dependsOn: ['b'] }, { id: 'b', title: 'y' }] },
        nodeRuns: { a: task.nodeRuns.a, b: task.nodeRuns.b } }
      let seq = driver.log.record(taskStateEnvelope(cyclic)).seq
      expectPoison(fold(driver.log), seq, /invalid plan: .*cycle/)
      driver.log.events.pop()
      const { e: _e, ...fewer } = task.nodeRuns
      seq = driver.log.record(taskStateEnvelope({ ...task, revision: 5, nodeRuns: fewer })).seq
      expectPoison(fold(driver.log), seq, /exactly one run per plan node/)
    })

    it('a change to a cleared task', () => {
      const driver = new Driver()
      driver.step((t, at) => newTask(t, { objective: 'o' }, at), 'T')
      const cleared = driver.step((t, at) => clear(t, at))
      const seq = driver.log.record(taskStateEnvelope({ ...cleared, revision: 3, phase: 'planning' })).seq
      expectPoison(fold(driver.log), seq, /was cleared and cannot change/)
    })

    it('a completed task changing other than by reopening', () => {
      const driver = new Driver()
      driver.start('T')
      const done = driver.complete()
      const seq = driver.log.record(taskStateEnvelope({ ...done, revision: done.revision + 1, phase: 'cleared' })).seq
      expectPoison(fold(driver.log), seq, /changed to cleared; a completed task changes only through a confirmed repair/)
    })

    it('a finished review job without a verdict', () => {
      const log = new Log()
      const seq = log.record(reviewJobEnvelope({ ...job('j'), status: 'finished' }, 'r')).seq
      expectPoison(fold(log), seq, /finished without a verdict/)
    })
  })
})

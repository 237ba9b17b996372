import { expect } from 'chai'
import { isDeepStrictEqual } from 'node:util'
import { TaskwardError } from '../src/errors'
import { readTaskState, TASK_NAMESPACE, taskReader, taskStateEnvelope, type Task } from '../src/task'

const envelope = (schemaVersion: number, payload: unknown, kind = 'state') =>
  ({ namespace: TASK_NAMESPACE, schemaVersion, kind, recordId: `r${schemaVersion}`, payload })

const NEW_FIELDS = ['acceptanceCycle', 'completedAt', 'reopenedFromProposalId', 'repairHistory'] as const

const base = { id: 'old', objective: 'legacy work', enabled: true }
const linearPlan = { acceptanceCriteria: ['works'], nodes: [{ id: 'a', title: 'first' }, { id: 'b', title: 'second' }] }

describe('task state reader (schema 1–11)', () => {
  it('reads a v1 record: run array becomes a record, nothing is invented', () => {
    const task = readTaskState(envelope(1, {
      ...base, revision: 4, phase: 'active', plan: linearPlan,
      nodeRuns: [{ nodeId: 'a', attempt: 1, status: 'passed' }, { nodeId: 'b', attempt: 2, status: 'running' }],
    }), 7)
    expect(task).to.deep.equal({
      ...base, revision: 4, phase: 'active', plan: linearPlan,
      nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 2, status: 'running' } },
    })
    expect(task.plan!.nodes[1]).not.to.have.property('dependsOn')
    expect(task.nodeRuns.a).not.to.have.any.keys('evidenceAfterSeq', 'review', 'reworkReason', 'priorAcceptance')
    expect(task).not.to.have.any.keys(...NEW_FIELDS, 'pendingReview', 'completionReview', 'pauseReason', 'resumePhase', 'planFeedback')
  })

  it('reads a v1 paused task without a pause reason (absent stays absent)', () => {
    const task = readTaskState(envelope(1, { ...base, revision: 2, phase: 'paused', nodeRuns: [] }), 3)
    expect(task).to.deep.equal({ ...base, revision: 2, phase: 'paused', nodeRuns: {} })
  })

  it('reads a v2 complete task: completion review without evidence, no completedAt or cycle', () => {
    const task = readTaskState(envelope(2, {
      ...base, revision: 9, phase: 'complete', plan: linearPlan,
      nodeRuns: [{ nodeId: 'a', attempt: 1, status: 'passed' }, { nodeId: 'b', attempt: 1, status: 'passed' }],
      completionReview: { jobId: 'c', verdict: 'pass', findings: [] },
    }), 11)
    expect(task.completionReview).to.deep.equal({ jobId: 'c', verdict: 'pass', findings: [] })
    expect(task).not.to.have.any.keys(...NEW_FIELDS)
  })

  it('reads v3 feedback and v4 DAG plans', () => {
    const v3 = readTaskState(envelope(3, { ...base, revision: 3, phase: 'planning', nodeRuns: [], planFeedback: ['add tests'] }), 1)
    expect(v3.planFeedback).to.deep.equal(['add tests'])
    const dag = { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'x', dependsOn: [] }, { id: 'b', title: 'y', dependsOn: ['a'] }] }
    const v4 = readTaskState(envelope(4, { ...base, revision: 5, phase: 'reviewing', plan: dag, nodeRuns: [],
      pendingReview: { kind: 'plan', jobId: 'p', forRevision: 5 } }), 1)
    expect(v4.plan).to.deep.equal(dag)
    expect(v4.nodeRuns).to.deep.equal({})
  })

  it('reads v6 runs, v7 pauses, v8 completion evidence and v9 recovery pauses', () => {
    const v6 = readTaskState(envelope(6, { ...base, revision: 6, phase: 'active', plan: linearPlan,
      nodeRuns: { a: { attempt: 2, status: 'pending', evidenceAfterSeq: 40, reworkReason: 'bug', priorAcceptance: { attempt: 1 } }, b: { attempt: 1, status: 'pending' } } }), 1)
    expect(v6.nodeRuns.a).to.deep.equal({ attempt: 2, status: 'pending', evidenceAfterSeq: 40, reworkReason: 'bug', priorAcceptance: { attempt: 1 } })
    const v7 = readTaskState(envelope(7, { ...base, revision: 2, phase: 'paused', pauseReason: 'restart', resumePhase: 'planning', nodeRuns: {} }), 1)
    expect(v7).to.include({ pauseReason: 'restart', resumePhase: 'planning' })
    const v8 = readTaskState(envelope(8, { ...base, revision: 8, phase: 'complete', plan: linearPlan,
      nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'passed' } },
      completionReview: { jobId: 'c', verdict: 'pass', findings: [], evidenceSeqs: [5], cutoffSeq: 6 } }), 1)
    expect(v8.completionReview).to.deep.equal({ jobId: 'c', verdict: 'pass', findings: [], evidenceSeqs: [5], cutoffSeq: 6 })
    expect(v8).not.to.have.any.keys(...NEW_FIELDS)
    const v9 = readTaskState(envelope(9, { ...base, revision: 2, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', nodeRuns: {} }), 1)
    expect(v9.pauseReason).to.equal('recovery')
  })

  it('reads v10 with repair fields and drops unknown keys', () => {
    const payload: Task = {
      ...base, revision: 12, phase: 'active', plan: linearPlan, acceptanceCycle: 2, reopenedFromProposalId: 'p1',
      nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 2, status: 'pending', evidenceAfterSeq: 30 } },
      repairHistory: [{
        proposalId: 'p1', title: 't', reason: 'r', rootNodeIds: ['b'], affectedNodeIds: ['b'], previousCycle: 1,
        previousRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'passed' } }, confirmedAt: 77, confirmationSeq: 30,
      }],
    }
    const read = readTaskState(envelope(10, { ...payload, smuggled: true }), 31)
    expect(read).to.deep.equal(payload)
    expect(read.repairHistory![0]).not.to.have.any.keys('completedAt', 'previousCompletionReview')
  })

  it('refuses what a version cannot contain, unknown versions and kinds', () => {
    const refuse = (env: ReturnType<typeof envelope>) => {
      expect(() => taskReader.read(env, 5)).to.throw(TaskwardError).with.property('code', 'RECORD_UNSUPPORTED')
    }
    refuse(envelope(1, { ...base, revision: 1, phase: 'reviewing', nodeRuns: [] }))
    refuse(envelope(7, { ...base, revision: 1, phase: 'paused', pauseReason: 'recovery', nodeRuns: {} }))
    refuse(envelope(10, { ...base, revision: 1, phase: 'paused', pauseReason: 'budget', nodeRuns: {} }))
    refuse(envelope(12, { ...base, revision: 1, phase: 'planning', nodeRuns: {} }))
    refuse(envelope(10, { ...base, revision: 1, phase: 'planning', nodeRuns: {} }, 'other'))
    refuse(envelope(10, { ...base, revision: 0, phase: 'planning', nodeRuns: {} }))
    refuse(envelope(10, { ...base, revision: 1, phase: 'planning', nodeRuns: { __proto__x: { attempt: 1, status: 'pending' } } }))
    expect(() => readTaskState(envelope(4, { ...base, revision: 2, phase: 'active', plan: linearPlan,
      nodeRuns: [{ nodeId: 'a', attempt: 1, status: 'pending' }, { nodeId: 'a', attempt: 1, status: 'pending' }] }), 5))
      .to.throw(TaskwardError, /two runs for node "a"/)
  })

  it('a v9 record with fields it cannot know keeps them absent after reading', () => {
    // acceptanceCycle is a v10 field: a v9 schema does not read it, so it is not carried over.
    const task = readTaskState(envelope(9, { ...base, revision: 1, phase: 'planning', nodeRuns: {}, acceptanceCycle: 4 }), 1)
    expect(task).not.to.have.property('acceptanceCycle')
  })

  it('reads a schema-10 paused record as written: its pause reason stays what it was, never `budget`', () => {
    // Before schema 11 a budget STOP paused as `recovery` and the token budget as `user`.
    for (const pauseReason of ['recovery', 'user'] as const) {
      const task = readTaskState(envelope(10, { ...base, revision: 7, phase: 'paused', pauseReason, resumePhase: 'active', plan: linearPlan,
        nodeRuns: { a: { attempt: 2, status: 'running' }, b: { attempt: 1, status: 'pending' } }, acceptanceCycle: 1 }), 1)
      expect(task).to.include({ phase: 'paused', pauseReason, resumePhase: 'active' })
    }
    // A schema-10 record cannot hold the schema-11 reason: refused, not read as something else.
    expect(() => readTaskState(envelope(10, { ...base, revision: 7, phase: 'paused', pauseReason: 'budget', nodeRuns: {} }), 4))
      .to.throw(TaskwardError, /seq 4/).with.property('code', 'RECORD_UNSUPPORTED')
  })

  it('reads a schema-11 budget pause', () => {
    const task = readTaskState(envelope(11, { ...base, revision: 7, phase: 'paused', pauseReason: 'budget', resumePhase: 'active', nodeRuns: {} }), 1)
    expect(task).to.include({ phase: 'paused', pauseReason: 'budget', resumePhase: 'active' })
  })

  it('reads a schema-11 loop pause; a schema-10 record cannot hold it', () => {
    const task = readTaskState(envelope(11, { ...base, revision: 7, phase: 'paused', pauseReason: 'loop', resumePhase: 'active', nodeRuns: {} }), 1)
    expect(task).to.include({ phase: 'paused', pauseReason: 'loop', resumePhase: 'active' })
    expect(() => readTaskState(envelope(10, { ...base, revision: 7, phase: 'paused', pauseReason: 'loop', nodeRuns: {} }), 4))
      .to.throw(TaskwardError, /seq 4/).with.property('code', 'RECORD_UNSUPPORTED')
  })

  it('writers always write schema 11 with only defined optional fields; reading gives the same task', () => {
    const task: Task = { ...base, revision: 1, phase: 'planning', nodeRuns: {}, pauseReason: undefined, plan: undefined }
    const env = taskStateEnvelope(task)
    expect(env).to.include({ namespace: TASK_NAMESPACE, schemaVersion: 11, kind: 'state', recordId: 'old:1' })
    expect(Object.keys(env.payload)).to.deep.equal(['id', 'revision', 'objective', 'phase', 'enabled', 'nodeRuns'])
    expect(isDeepStrictEqual(readTaskState(structuredClone(env), 1), env.payload)).to.equal(true)
  })
})

import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { RECORD_EVENT_TYPE, TASK_NAMESPACE } from '@taskward/protocol'
import { removeTree, type TestHost } from '@taskward/testkit'
import { bootSupervisor, refused, supervisorOf, workspace } from './fixtures'

/*
 * Older task records (schema 1–10) appended to a session and read back through the plugin: every field
 * the old shape lacked stays absent (no timestamps, cycles, evidence or pause reasons are invented).
 */

const plan = { acceptanceCriteria: ['works'], nodes: [{ id: 'a', title: 'first' }, { id: 'b', title: 'second' }] }
const base = { id: 'legacy', revision: 1, objective: 'legacy work', enabled: true }
const v10Only = ['acceptanceCycle', 'completedAt', 'reopenedFromProposalId', 'repairHistory']

/** [version, payload, what today's reader returns] */
const FIXTURES: [number, object, object][] = [
  [1, { ...base, phase: 'active', plan, nodeRuns: [{ nodeId: 'a', attempt: 1, status: 'passed' }, { nodeId: 'b', attempt: 1, status: 'running' }] },
    { ...base, phase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'running' } } }],
  [2, { ...base, phase: 'complete', plan, nodeRuns: [{ nodeId: 'a', attempt: 1, status: 'passed' }, { nodeId: 'b', attempt: 1, status: 'passed' }],
    completionReview: { jobId: 'c', verdict: 'pass', findings: [] } },
  { ...base, phase: 'complete', plan, nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'passed' } },
    completionReview: { jobId: 'c', verdict: 'pass', findings: [] } }],
  [3, { ...base, phase: 'planning', nodeRuns: [], planFeedback: ['more tests'] }, { ...base, phase: 'planning', nodeRuns: {}, planFeedback: ['more tests'] }],
  [4, { ...base, phase: 'reviewing', plan: { ...plan, nodes: [{ id: 'a', title: 'x', dependsOn: [] }] }, nodeRuns: [],
    pendingReview: { kind: 'plan', jobId: 'p', forRevision: 1 } },
  { ...base, phase: 'reviewing', plan: { ...plan, nodes: [{ id: 'a', title: 'x', dependsOn: [] }] }, nodeRuns: {},
    pendingReview: { kind: 'plan', jobId: 'p', forRevision: 1 } }],
  [5, { ...base, phase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'pending' }, b: { attempt: 1, status: 'pending' } } },
    { ...base, phase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'pending' }, b: { attempt: 1, status: 'pending' } } }],
  [6, { ...base, phase: 'active', plan, nodeRuns: { a: { attempt: 2, status: 'pending', evidenceAfterSeq: 4, reworkReason: 'bug', priorAcceptance: { attempt: 1 } },
    b: { attempt: 1, status: 'pending' } } },
  { ...base, phase: 'active', plan, nodeRuns: { a: { attempt: 2, status: 'pending', evidenceAfterSeq: 4, reworkReason: 'bug', priorAcceptance: { attempt: 1 } },
    b: { attempt: 1, status: 'pending' } } }],
  [7, { ...base, phase: 'paused', pauseReason: 'restart', resumePhase: 'planning', nodeRuns: {} },
    { ...base, phase: 'paused', pauseReason: 'restart', resumePhase: 'planning', nodeRuns: {} }],
  [8, { ...base, phase: 'complete', plan, nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'passed' } },
    completionReview: { jobId: 'c', verdict: 'pass', findings: [], evidenceSeqs: [0], cutoffSeq: 0 } },
  { ...base, phase: 'complete', plan, nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'passed' } },
    completionReview: { jobId: 'c', verdict: 'pass', findings: [], evidenceSeqs: [0], cutoffSeq: 0 } }],
  [9, { ...base, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'pending' } },
    acceptanceCycle: 3 },
  { ...base, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'pending' } } }],
  // A schema-10 budget stop was paused as `recovery`: it reads as written, never as the schema-11 `budget`.
  [10, { ...base, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'running' }, b: { attempt: 1, status: 'pending' } } },
    { ...base, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', plan, nodeRuns: { a: { attempt: 1, status: 'running' }, b: { attempt: 1, status: 'pending' } } }],
]

describe('supervisor: records of schema 1–10 through the plugin', () => {
  let host: TestHost
  let cwd: string

  before(async () => {
    host = await bootSupervisor({ automaticContinuation: false })
    cwd = await workspace()
  })
  after(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  async function sessionWith(version: number, payload: object): Promise<Session> {
    const session = await host.ctx.sessions.create({ cwd })
    await session.append('user/message', { text: 'before the supervisor' })
    await session.append(RECORD_EVENT_TYPE, { namespace: TASK_NAMESPACE, schemaVersion: version, kind: 'state', recordId: `legacy:${version}`, payload })
    return session
  }

  for (const [version, payload, expected] of FIXTURES) {
    it(`reads a v${version} record without fabricated fields`, async () => {
      const session = await sessionWith(version, payload)
      const state = await supervisorOf(host).state(session)
      expect(state.poisoned).to.equal(undefined)
      expect(state.current).to.deep.equal(expected)
      expect(state.current).to.not.have.any.keys(...v10Only)
    })
  }

  it('an old complete record still blocks implementation tools', async () => {
    const [, payload] = FIXTURES.find(([v]) => v === 2)!
    const session = await sessionWith(2, payload)
    await refused(host, session, 'write', { path: 'x.md', content: 'x' }, 'REPAIR_CONFIRMATION_REQUIRED')
    const status = await host.ctx.tools.execute(session, 'task_status', {})
    expect(status.result.task).to.include({ acceptanceCycle: 1, phase: 'complete' }).and.not.have.property('completedAt')
  })

  it('a schema-10 paused record shows its own pause reason in /task status', async () => {
    const [, payload] = FIXTURES.find(([v]) => v === 10)!
    const session = await sessionWith(10, payload)
    const status = await supervisorOf(host).status(session)
    expect(status.task).to.include({ phase: 'paused', pauseReason: 'recovery' })
    expect(status.blockedReason).to.include('paused (recovery)')
  })

  it('a record of an unknown version (12) poisons the projection and blocks execution', async () => {
    const session = await sessionWith(12, { ...base, phase: 'planning', nodeRuns: {} })
    const state = await supervisorOf(host).state(session)
    expect(state.poisoned?.seq).to.equal(1)
    expect(state.poisoned?.message).to.match(/schema version 12/)
    await refused(host, session, 'write', { path: 'x.md', content: 'x' }, 'SUPERVISOR_POISONED')
  })
})

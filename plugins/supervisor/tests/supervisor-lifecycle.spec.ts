import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { foldSupervisorEvents, SUPERVISOR_PROJECTION_KEY, SUPERVISOR_PROJECTION_VERSION, type SessionEvent } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import {
  command, commandError, ok, PLAN, refused, reviewsSettled, scriptReviews, supervisorOf, useSupervisedSession, verdict,
} from './fixtures'

async function allEvents(session: Session) {
  const events: SessionEvent[] = []
  for await (const event of session.events()) events.push(event)
  return events
}

describe('supervisor: a task through its lifecycle', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useSupervisedSession((env) => ({ host, cwd, session } = env))

  const state = () => supervisorOf(host).state(session)

  /** Start, report and (with the scripted reviewer's `answer`) review one node. */
  async function runNode(nodeId: string, answer: 'pass' | 'revise' = 'pass', findings: string[] = []) {
    await ok(host, session, 'task_start_node', { nodeId })
    await ok(host, session, 'write', { path: `src/${nodeId}.ts`, content: `export const ${nodeId} = true\n` })
    const evidence = session.seq - 1
    scriptReviews(host, verdict(answer, findings, [evidence]))
    const reported = await ok(host, session, 'task_report_stage', { nodeId, summary: `did ${nodeId}`, evidenceSeqs: [evidence] })
    await reviewsSettled(host, session)
    return reported
  }

  it('runs new → plan (revise, resubmit, pass) → approve → DAG order with a stage revise → completion', async () => {
    const created = await command(host, session, '/task new parse nested lists')
    expect(created).to.include({ phase: 'planning', revision: 1 })

    scriptReviews(host, verdict('revise', ['add a node for error messages']))
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: ['works'], nodes: [{ id: 'a', title: 'tokenizer' }] })
    await reviewsSettled(host, session)
    expect((await state()).current).to.include({ phase: 'planning' })
    expect((await state()).current!.planFeedback).to.deep.equal(['add a node for error messages'])

    scriptReviews(host, 'pass')
    await ok(host, session, 'task_submit_plan', PLAN)
    await reviewsSettled(host, session)
    expect((await state()).current!.phase).to.equal('awaiting-approval')
    expect((await state()).current).to.not.have.property('planFeedback')
    await refused(host, session, 'task_start_node', { nodeId: 'a' }, 'TASK_NOT_EXECUTING')

    await command(host, session, '/task approve')
    expect((await state()).current!.phase).to.equal('active')
    const blocked = await refused(host, session, 'task_start_node', { nodeId: 'b' }, 'TASK_NOT_EXECUTING')
    expect(blocked.message).to.match(/dependencies "a" have not passed/)

    await runNode('a', 'revise', ['tokenizer drops commas'])
    let task = (await state()).current!
    expect(task.nodeRuns.a).to.include({ status: 'needs-revision' })
    expect(task.nodeRuns.a.review).to.include({ verdict: 'revise' })
    await refused(host, session, 'task_start_node', { nodeId: 'b' }, 'TASK_NOT_EXECUTING')
    await runNode('a')
    await runNode('c')
    await refused(host, session, 'task_start_node', { nodeId: 'd' }, 'TASK_NOT_EXECUTING')
    await runNode('b')
    await runNode('d')
    task = (await state()).current!
    expect(Object.values(task.nodeRuns).map((r) => r.status)).to.deep.equal(['passed', 'passed', 'passed', 'passed'])

    const cutoffBefore = session.seq
    scriptReviews(host, verdict('pass', [], [cutoffBefore - 1]))
    await ok(host, session, 'task_request_completion', { summary: 'all done' })
    await reviewsSettled(host, session)
    const final = await state()
    task = final.current!
    expect(task.phase).to.equal('complete')
    expect(task.completedAt).to.be.a('number')
    expect(task.completionReview).to.include({ verdict: 'pass', cutoffSeq: cutoffBefore })
    expect(task.completionReview!.evidenceSeqs).to.deep.equal([cutoffBefore - 1])

    // Every review ran in its own reviewer session linked to the main one, and recorded what it read.
    const reviewers = await host.ctx.sessions.list({ parentId: session.id })
    expect(reviewers.map((s) => s.role)).to.deep.equal(Array(final.reviews.length).fill('reviewer'))
    expect(final.reviews.map((j) => j.kind)).to.deep.equal(['plan', 'plan', 'stage', 'stage', 'stage', 'stage', 'stage', 'completion'])
    for (const job of final.reviews) {
      expect(job).to.include({ status: 'finished', model: 'scripted', taskId: task.id })
      expect(reviewers.map((s) => s.id)).to.include(job.reviewerSessionId)
      expect(job.cutoffSeq).to.be.lessThan(session.seq)
    }
    expect(final.reviews[2]).to.include({ nodeId: 'a', verdict: 'revise' })
    expect(final.reviews[2].evidenceSeqs).to.have.length(1)
  })

  it('rebuilds the identical projection from the log alone', async () => {
    await command(host, session, '/task new rebuild me')
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_submit_plan', PLAN)
    await reviewsSettled(host, session)
    await command(host, session, '/task approve')
    await runNode('a')
    const before = await state()
    expect(before.current!.nodeRuns.a.status).to.equal('passed')

    await host.ctx.projections.invalidate(session, SUPERVISOR_PROJECTION_KEY)
    supervisorOf(host).forget(session.id)
    const rebuilt = await state()
    expect(rebuilt).to.deep.equal(before)
    expect(rebuilt).to.deep.equal(foldSupervisorEvents(await allEvents(session)))
    expect(await host.ctx.projections.describe(session, SUPERVISOR_PROJECTION_KEY)).to.deep.equal({ version: SUPERVISOR_PROJECTION_VERSION, asOfSeq: session.seq - 1 })
    expect(SUPERVISOR_PROJECTION_VERSION).to.equal(12)
  })

  it('a rebuild that reads only records still stands at the log\'s last seq when the last events are not records', async () => {
    await command(host, session, '/task new tail of plain events')
    for (let i = 0; i < 5; i++) await session.append('user/message', { text: `plain ${i}` })
    const before = await state()
    expect(before.asOfSeq).to.equal(session.seq - 1)

    await host.ctx.projections.invalidate(session, SUPERVISOR_PROJECTION_KEY)
    supervisorOf(host).forget(session.id)
    const rebuilt = await state()
    expect(rebuilt).to.deep.equal(before)
    expect(rebuilt).to.deep.equal(foldSupervisorEvents(await allEvents(session)))
    // Current for the step guard's synchronous path, and a transaction writes at once.
    expect(supervisorOf(host).currentState(session)).to.equal(rebuilt)
    await session.append('user/message', { text: 'one more' })
    expect((await state()).asOfSeq).to.equal(session.seq - 1)
    await command(host, session, '/task off')
    expect((await state()).asOfSeq).to.equal(session.seq - 1)
  })

  it('rebuilds when the cached projection has another version (a version bump)', async () => {
    await command(host, session, '/task new cached')
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_submit_plan', PLAN)
    await reviewsSettled(host, session)
    const before = await state()
    await host.ctx.projections.get(session, SUPERVISOR_PROJECTION_KEY)
    // An older build's cache: version 10 and a state that is not this log's.
    await host.ctx.database.set('taskward_projection', { sessionId: session.id, key: SUPERVISOR_PROJECTION_KEY },
      { version: 10, state: { history: [], reviews: [], proposals: [], asOfSeq: session.seq - 1 } })
    await host.restart()
    const reopened = await host.ctx.sessions.get(session.id)
    expect(await supervisorOf(host).state(reopened)).to.deep.equal(before)
  })

  it('refuses out-of-order and unknown work with coded errors, writing nothing', async () => {
    expect((await refused(host, session, 'task_submit_plan', PLAN, 'TASK_NOT_FOUND')).message).to.match(/\/task new/)
    await command(host, session, '/task new x')
    expect((await commandError(host, session, '/task new y')).code).to.equal('ACTIVE_TASK_CONFLICT')
    const cyclic = { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a', dependsOn: ['b'] }, { id: 'b', title: 'b', dependsOn: ['a'] }] }
    expect((await refused(host, session, 'task_submit_plan', cyclic, 'TASK_INVALID')).message).to.match(/cycle/)
    expect((await commandError(host, session, '/task approve')).code).to.equal('TASK_NOT_EXECUTING')
    await refused(host, session, 'task_request_completion', {}, 'TASK_NOT_EXECUTING')
    await refused(host, session, 'task_report_stage', { nodeId: 'a' }, 'TASK_NOT_EXECUTING')
    expect((await commandError(host, session, '/task frobnicate')).code).to.equal('TASK_INVALID')
    const current = (await state()).current!
    expect(current.revision).to.equal(1)
    expect((await state()).reviews).to.deep.equal([])
    expect(await host.ctx.sessions.list({ parentId: session.id })).to.have.length(0)
  })
})

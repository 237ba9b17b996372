import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { defineErrorCode, TaskwardError } from '@taskward/protocol'
import { waitFor, type TestHost } from '@taskward/testkit'
import {
  approvedTask, command, ok, refused, reviewsSettled, scriptReviews, supervisorOf, useSupervisedSession, verdict,
} from './fixtures'

describe('supervisor: reviews', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useSupervisedSession((env) => ({ host, cwd, session } = env))

  const state = () => supervisorOf(host).state(session)

  async function passNode(nodeId: string) {
    await ok(host, session, 'task_start_node', { nodeId })
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_report_stage', { nodeId })
    await reviewsSettled(host, session)
  }

  it('lets the reviewer read bounded pages of the main log up to the cutoff only', async () => {
    await command(host, session, '/task new read the log')
    for (let i = 0; i < 5; i++) await session.append('assistant/message', { text: `note ${i}` })
    const pages: any[] = []
    host.scripted.script('reviewer', [
      { toolCalls: [{ name: 'review_read_log', args: { from: 0, limit: 3 } }, { name: 'review_read_log', args: { from: 3, limit: 200 } }] },
      ({ results }) => {
        pages.push(...results.map((r) => r.result))
        return verdict('pass', [], [pages[0].events[0].seq])
      },
    ])
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    const job = (await state()).reviews[0]
    expect(pages[0].sessionId).to.equal(session.id)
    // Messages, tool calls and results only: the command's reply and the task record (1, 2) are skipped.
    expect(pages[0].events.map((e: any) => [e.seq, e.type])).to.deep.equal([[0, 'user/message'], [3, 'assistant/message'], [4, 'assistant/message']])
    expect(pages[0].skipped).to.equal(2)
    expect(pages[0].next).to.equal(5)
    const seqs = pages[1].events.map((e: any) => e.seq)
    expect(seqs.at(-1)).to.equal(job.cutoffSeq)
    expect(pages[1]).to.not.have.property('next')
    // The cutoff is the tool call that asked for the review: the review's own records are after it.
    const cut = await session.event(job.cutoffSeq)
    expect(cut).to.include({ type: 'tool/call' })
    expect(job).to.include({ status: 'finished', verdict: 'pass' })
    expect(job.evidenceSeqs).to.deep.equal([0])
  })

  it('shows the reviewer the main session as the model lived it: streaming fragments never fill a page', async () => {
    await command(host, session, '/task new write it')
    // A host that logs every streamed argument delta (DSH's assistant/chunk) between the real events.
    const fragments = () => Array.from({ length: 40 }, (_, k) => ({ type: 'dsh:assistant/chunk', data: { delta: `{"content":"${k}` } }))
    await session.appendBatch(fragments())
    await ok(host, session, 'write', { path: 'w.txt', content: 'written\n' })
    await session.appendBatch(fragments())
    const pages: any[] = []
    host.scripted.script('reviewer', [
      { toolCalls: [{ name: 'review_read_log', args: { from: 0, limit: 3 } }, { name: 'review_read_log', args: { from: 0, limit: 200 } }] },
      ({ results }) => { pages.push(...results.map((r) => r.result)); return verdict('pass') },
    ])
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    const [first3, whole] = pages
    // Before, these 3 were the command, its reply and the task record, and 40 fragments followed.
    expect(first3.events.map((e: any) => [e.type, e.name])).to.deep.equal([['user/message', undefined], ['tool/call', 'write'], ['tool/result', 'write']])
    expect(first3.next).to.equal(first3.events[2].seq + 1)
    expect(whole.events.map((e: any) => [e.type, e.name])).to.deep.equal([
      ['user/message', undefined], ['tool/call', 'write'], ['tool/result', 'write'], ['tool/call', 'task_submit_plan'],
    ])
    expect(whole.skipped).to.be.at.least(80)
    expect(whole.events[1].args).to.deep.equal({ path: 'w.txt', content: 'written\n' })
  })

  it('lets a reviewer\'s agent go once its verdict is applied: only reviews in flight keep one', async () => {
    await command(host, session, '/task new review and let go')
    const reviewers = () => host.ctx.agents.list().filter((agent) => agent.session.role === 'reviewer')
    scriptReviews(host, 'revise')
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    const jobs = (await state()).reviews
    expect(jobs.map((job) => job.status)).to.deep.equal(['finished', 'finished'])
    await waitFor(() => reviewers().length === 0, { what: 'the finished reviewers to be let go' })
    // The reviewer's session and log stay: a person can still read what it did.
    const reviewerSession = await host.ctx.sessions.get(jobs[0].reviewerSessionId)
    expect((await reviewerSession.read({ from: 0, limit: 50 })).some((event) => event.type === 'tool/call')).to.equal(true)
  })

  it('refuses evidence after the cutoff and keeps the job open for a corrected verdict', async () => {
    await command(host, session, '/task new cite carefully')
    host.scripted.script('reviewer', [verdict('pass', [], [10_000]), verdict('revise', ['needs detail'])])
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    expect((await state()).current).to.include({ phase: 'planning' })
    expect((await state()).reviews[0]).to.include({ verdict: 'revise' })
  })

  it('pauses with review-fault when the reviewer ends its turn without a verdict; /task resume re-runs the review', async () => {
    await approvedTask(host, session)
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
    host.scripted.script('reviewer', [{ text: 'looks fine to me' }])
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    let task = (await state()).current!
    expect(task).to.include({ phase: 'paused', pauseReason: 'review-fault', resumePhase: 'reviewing' })
    await refused(host, session, 'task_start_node', { nodeId: 'b' }, 'TASK_NOT_EXECUTING')

    scriptReviews(host, 'pass')
    await command(host, session, '/task resume')
    await reviewsSettled(host, session)
    task = (await state()).current!
    expect(task.phase).to.equal('active')
    expect(task.nodeRuns.a.status).to.equal('passed')
    expect((await state()).reviews.map((j) => [j.kind, j.status])).to.deep.equal([['plan', 'finished'], ['stage', 'failed'], ['stage', 'finished']])
  })

  it('a needs-user stage verdict pauses for a decision; resume makes the node ready again', async () => {
    await approvedTask(host, session)
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
    scriptReviews(host, verdict('needs-user', ['which greeting language?']))
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    expect((await state()).current).to.include({ phase: 'paused', pauseReason: 'decision' })
    expect((await state()).current!.nodeRuns.a.status).to.equal('awaiting-user')
    await command(host, session, '/task resume')
    const task = (await state()).current!
    expect(task.phase).to.equal('active')
    expect(task.nodeRuns.a.status).to.equal('needs-revision')
    expect((await ok(host, session, 'task_status')).readyNodes).to.deep.equal(['a'])
  })

  it('rework keeps the reason and the prior acceptance and resets descendants', async () => {
    await approvedTask(host, session)
    await passNode('a')
    await passNode('b')
    const reworked = await ok(host, session, 'task_rework_node', { nodeId: 'a', reason: 'greeting is rude' })
    expect(reworked.reworked).to.deep.equal(['a', 'b'])
    const task = (await state()).current!
    expect(task.nodeRuns.a).to.include({ attempt: 2, status: 'pending', reworkReason: 'greeting is rude' })
    expect(task.nodeRuns.a.priorAcceptance).to.include({ attempt: 1 })
    expect(task.nodeRuns.b).to.include({ attempt: 2, status: 'pending' })
  })

  it('asks completion gates before requesting a completion review and again before applying a pass', async () => {
    await approvedTask(host, session)
    await passNode('a')
    await passNode('b')
    let refusal: TaskwardError | undefined = new TaskwardError('VALIDATION_MISSING', 'No validation run was recorded; run the checks first.')
    const asked: string[] = []
    const dispose = supervisorOf(host).registerCompletionGate(async (s, task) => {
      asked.push(`${s.id}:${task.phase}`)
      return refusal
    })
    const denied = await refused(host, session, 'task_request_completion', {}, 'VALIDATION_MISSING')
    expect(denied.message).to.match(/run the checks first/)
    expect((await state()).current!.phase).to.equal('active')

    refusal = undefined
    host.scripted.script('reviewer', [async () => {
      refusal = new TaskwardError('VERDICT_NEGATIVE', 'The last check failed.')
      return verdict('pass')
    }])
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    const task = (await state()).current!
    expect(task.phase).to.equal('active')
    expect(task.completionReview).to.include({ verdict: 'revise' })
    expect(task.completionReview!.findings.at(-1)).to.match(/VERDICT_NEGATIVE/)
    expect((await state()).reviews.at(-1)).to.include({ kind: 'completion', verdict: 'pass' })
    expect(asked).to.deep.equal([`${session.id}:active`, `${session.id}:active`, `${session.id}:reviewing`])

    dispose()
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    expect((await state()).current!.phase).to.equal('complete')
    expect(asked).to.have.length(3)
  })

  it('hands a plugin gate\'s coded refusal with its details to the tool caller and to the vetoed reviewer', async () => {
    const code = defineErrorCode('gate-test.changelog_missing', 409)
    await approvedTask(host, session)
    await passNode('a')
    await passNode('b')
    let refusal: TaskwardError | undefined = new TaskwardError(code, 'Add a CHANGELOG entry.', { file: 'CHANGELOG.md' })
    supervisorOf(host).registerCompletionGate(async () => refusal)
    const denied = await refused(host, session, 'task_request_completion', {}, code)
    expect(denied.details).to.deep.equal({ file: 'CHANGELOG.md' })

    refusal = undefined
    host.scripted.script('reviewer', [async () => {
      refusal = new TaskwardError(code, 'The entry went away.', { file: 'CHANGELOG.md', seen: false })
      return verdict('pass')
    }])
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    const job = (await state()).reviews.at(-1)!
    const reviewer = await host.ctx.sessions.get(job.reviewerSessionId)
    const answer = (await reviewer.read()).find((e) => e.type === 'tool/result' && e.data.name === 'review_verdict')!
    expect(answer.data.result.refusal).to.deep.equal({ code, message: 'The entry went away.', details: { file: 'CHANGELOG.md', seen: false } })
    expect((await state()).current!.completionReview!.findings.at(-1)).to.contain(code)
  })
})

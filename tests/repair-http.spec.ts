import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { REPAIR_NAMESPACE } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import {
  allIdle, completeDiamond, evidenceSeq, fileIs, followups, ok, proposeRepair, receipts,
  records, refused, reopens, useRepairSession,
} from '../plugins/repair/tests/fixtures'

/*
 * The repair HTTP contract (docs/repair.md) through the real server with real tokens: the view, the
 * user's proposals, Confirm and Decline, and the refusals a console shows.
 */

const ORIGINAL = 'export const total = (rows: number[]) => 0\n'

describe('repair over HTTP', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useRepairSession((env) => ({ host, cwd, session } = env))

  const repairs = () => host.http.json(`/api/sessions/${session.id}/repairs`)
  const post = async (body: unknown, init: Parameters<TestHost['http']['post']>[2] = {}) => {
    const response = await host.http.post(`/api/sessions/${session.id}/repair`, body, init)
    return { status: response.status, body: await response.json() as any }
  }
  const click = (action: 'confirm' | 'decline', answer: { proposalId: string, taskId: string, revision: number }) =>
    post({ action, proposalId: answer.proposalId, taskId: answer.taskId, revision: answer.revision })

  it('shows proposals with source labels, quoted evidence and the current task', async () => {
    const task = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    const { status, body } = await repairs()
    expect(status).to.equal(200)
    expect(body.current).to.deep.equal({ taskId: task.id, revision: task.revision, phase: 'complete' })
    expect(body.proposals).to.have.length(1)
    const [view] = body.proposals
    expect(view).to.include({ status: 'pending', sourceLabel: 'main agent' })
    expect(view.proposal).to.include({ id: answer.proposalId, source: 'main-agent', proposerSessionId: session.id })
    expect(view.evidence).to.have.length(1)
    expect(view.evidence[0]).to.include({ seq: view.proposal.evidenceSeqs[0], type: 'tool/result' })
    expect(view.evidence[0].text).to.include('read').and.to.include('total')
    expect(view.evidence[0].text.length).to.be.at.most(500)
  })

  it('takes the user\'s proposal (source user, default title, no invented proposer) and denies write while it waits', async () => {
    const task = await completeDiamond(host, session)
    const reason = `The totals ignore negative rows; ${'details '.repeat(20)}`
    const proposed = await post({ action: 'propose', taskId: task.id, revision: task.revision, reason, rootNodeIds: ['b'] })
    expect(proposed.status).to.equal(200)
    expect(proposed.body).to.include({ ok: true, outcome: 'proposed' })
    const again = await post({ action: 'propose', taskId: task.id, revision: task.revision, reason, rootNodeIds: ['b'] })
    expect(again.body).to.deep.equal({ ok: true, outcome: 'identical-pending', proposalId: proposed.body.proposalId,
      message: 'The same repair is already waiting for a decision; nothing new was recorded.' })
    const [record] = await records(session, REPAIR_NAMESPACE, 'proposal')
    expect(record.data.payload.source).to.equal('user')
    expect(record.data.payload.title).to.equal(reason.slice(0, 80).trim())
    expect(record.data.payload).not.to.have.property('proposerSessionId')
    expect(record.data.payload.evidenceSeqs).to.deep.equal([])
    expect((await repairs()).body.proposals[0].sourceLabel).to.equal('user')
    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'broken' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await fileIs(cwd, 'src/totals.ts', ORIGINAL)
  })

  it('confirms once (one receipt, one reopen, one turn); again and concurrently changes nothing more', async () => {
    const done = await completeDiamond(host, session)
    await allIdle(host, session)
    const answer = await proposeRepair(host, session, ['b', 'c'])
    const before = await followups(session)
    const served = host.scripted.served.length
    const results = await Promise.all([click('confirm', answer), click('confirm', answer)])
    expect(results.map((r) => r.status)).to.deep.equal([200, 200])
    expect(results.map((r) => r.body.outcome).sort()).to.deep.equal(['already-applied', 'reopened'])
    const reopened = results.find((r) => r.body.outcome === 'reopened')!.body
    expect(reopened).to.deep.equal({ ok: true, outcome: 'reopened', taskId: done.id, revision: done.revision + 1, acceptanceCycle: 2, affectedNodeIds: ['b', 'c', 'd'],
      message: `Reopened: task ${done.id} is in acceptance cycle 2 (revision ${done.revision + 1}). Affected nodes b, c, d wait for a new attempt; the agent continues.` })
    await allIdle(host, session)
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    expect(await followups(session)).to.equal(before + 1)
    expect(host.scripted.served.length).to.equal(served + 1)

    const third = await click('confirm', answer)
    expect(third.body).to.deep.equal({ ...reopened, outcome: 'already-applied',
      message: `This repair was already applied: task ${done.id} is in acceptance cycle 2. Nothing more happened.` })
    await allIdle(host, session)
    expect(await receipts(session)).to.have.length(1)
    expect(await followups(session)).to.equal(before + 1)
    expect(host.scripted.served.length).to.equal(served + 1)
    await ok(host, session, 'write', { path: 'src/totals.ts', content: 'fixed\n' })
    expect((await repairs()).body.proposals[0]).to.include({ status: 'applied' })
  })

  it('answers ARTIFACT_CHANGED (409) for changed files and no receipt; a refreshed proposal confirms', async () => {
    await completeDiamond(host, session)
    const stale = await proposeRepair(host, session, ['d'])
    await writeFile(join(cwd, 'README.md'), '# totals, edited outside\n')
    const refusedClick = await click('confirm', stale)
    expect(refusedClick.status).to.equal(409)
    expect(refusedClick.body).to.include({ code: 'ARTIFACT_CHANGED' })
    expect(refusedClick.body.error).to.match(/propose again/)
    expect(await receipts(session)).to.have.length(0)
    const fresh = await proposeRepair(host, session, ['d'])
    expect((await click('confirm', fresh)).body.outcome).to.equal('reopened')
  })

  it('answers ACTIVE_TASK_CONFLICT (409) with the active task while another task runs, writing nothing', async () => {
    await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    await host.ctx.commands.input(session, '/task new another objective')
    const active = (await host.ctx.supervisor.state(session)).current!
    const seq = session.seq
    const result = await click('confirm', answer)
    expect(result.status).to.equal(409)
    expect(result.body).to.include({ code: 'ACTIVE_TASK_CONFLICT' })
    expect(result.body.details.activeTaskId).to.equal(active.id)
    expect(session.seq).to.equal(seq)
  })

  it('declines idempotently; the task stays complete and write stays denied', async () => {
    const done = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['c'])
    const declined = 'Declined: the task stays complete. The agent still cannot change files without a confirmed repair.'
    expect((await click('decline', answer)).body).to.deep.equal({ ok: true, outcome: 'declined', message: declined })
    expect((await click('decline', answer)).body).to.deep.equal({ ok: true, outcome: 'already-declined', message: declined })
    expect((await host.ctx.supervisor.state(session)).current).to.deep.equal(done)
    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'broken' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await fileIs(cwd, 'src/totals.ts', ORIGINAL)
    const stale = await click('confirm', answer)
    expect([stale.status, stale.body.code]).to.deep.equal([409, 'REPAIR_STALE'])
  })

  it('refuses bad input, missing or foreign tokens and foreign origins', async () => {
    const done = await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    const answer = await ok(host, session, 'task_propose_repair', { title: 't', reason: 'r', rootNodeIds: ['b'], evidenceSeqs: [seq] })
    const expectCode = (r: { status: number, body: any }, status: number, code: string) => expect([r.status, r.body.code]).to.deep.equal([status, code])
    expectCode(await post({ action: 'reopen' }), 400, 'BAD_REQUEST')
    expectCode(await post('not json'), 400, 'BAD_REQUEST')
    expectCode(await post({ action: 'confirm', proposalId: answer.proposalId, taskId: done.id }), 400, 'BAD_REQUEST')
    expectCode(await post({ action: 'propose', taskId: done.id, revision: done.revision, reason: 'r', rootNodeIds: ['zz'] }), 400, 'INVALID_REPAIR_SCOPE')
    expectCode(await post({ action: 'propose', taskId: done.id, revision: done.revision + 5, reason: 'r', rootNodeIds: ['b'] }), 409, 'REPAIR_STALE')
    expectCode(await post({ action: 'confirm', proposalId: answer.proposalId, taskId: done.id, revision: done.revision }, { token: null }), 401, 'UNAUTHORIZED')
    const otherToken = host.ctx.connection.issueSessionToken('some-other-session')
    expectCode(await post({ action: 'confirm', proposalId: answer.proposalId, taskId: done.id, revision: done.revision }, { token: otherToken }), 403, 'FORBIDDEN')
    expectCode(await post({ action: 'confirm', proposalId: answer.proposalId, taskId: done.id, revision: done.revision }, { origin: 'http://evil.example' }), 403, 'FORBIDDEN')
    const missing = await host.http.json('/api/sessions/no-such-session/repairs')
    expectCode(missing, 404, 'SESSION_NOT_FOUND')
    expect(await receipts(session)).to.have.length(0)

    // The session's own token opens its repairs and may confirm.
    const own = host.ctx.connection.issueSessionToken(session.id)
    const view = await host.http.json(`/api/sessions/${session.id}/repairs`, { token: own })
    expect(view.status).to.equal(200)
    expect((await post({ action: 'confirm', proposalId: answer.proposalId, taskId: done.id, revision: done.revision }, { token: own })).body.outcome)
      .to.equal('reopened')
  })

  it('validates bodies with schemas: a coded 400 naming the field, nothing written', async () => {
    const done = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    const binding = { proposalId: answer.proposalId, taskId: done.id, revision: done.revision }
    const cases: [unknown, string, RegExp][] = [
      [{}, 'action', /"action" must be "confirm", "decline" or "propose"/],
      [{ action: 'reopen' }, 'action', /"action" must be/],
      [{ action: 'confirm', ...binding, revision: 0 }, 'revision', /"revision" must be the positive task revision/],
      [{ action: 'confirm', ...binding, revision: '3' }, 'revision', /"revision"/],
      [{ action: 'decline', ...binding, proposalId: '   ' }, 'proposalId', /"proposalId" must be the id of the proposal/],
      [{ action: 'confirm', proposalId: binding.proposalId, revision: done.revision }, 'taskId', /"taskId"/],
      [{ action: 'propose', taskId: done.id, revision: done.revision, reason: 'r', rootNodeIds: ['b', 7] }, 'rootNodeIds', /"rootNodeIds" must be an array of node ids/],
      [{ action: 'propose', taskId: done.id, revision: done.revision, reason: '', rootNodeIds: ['b'] }, 'reason', /"reason" must say what is wrong/],
      [{ action: 'propose', taskId: done.id, revision: done.revision, reason: 'r', rootNodeIds: ['b'], title: 5 }, 'title', /"title" must be a string/],
    ]
    for (const [body, field, message] of cases) {
      const { status, body: answerBody } = await post(body)
      expect([status, answerBody.code, answerBody.details?.field], JSON.stringify(body)).to.deep.equal([400, 'BAD_REQUEST', field])
      expect(answerBody.error).to.match(message)
    }
    expect((await post([1, 2])).body).to.deep.include({ code: 'BAD_REQUEST', error: 'The body must be a JSON object.' })
    expect(await receipts(session)).to.have.length(0)
    expect(await records(session, REPAIR_NAMESPACE, 'proposal')).to.have.length(1)
  })
})

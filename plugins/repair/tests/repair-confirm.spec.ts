import { expect } from 'chai'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { REPAIR_NAMESPACE } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import {
  allIdle, bindingOf, completeDiamond, fileIs, followups, ok, proposeRepair, receipts,
  records, refused, rejects, reopens, useRepairSession,
} from './fixtures'

const ORIGINAL = 'export const total = (rows: number[]) => 0\n'

describe('repair: confirmation and decline', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useRepairSession((env) => ({ host, cwd, session } = env))

  const mainCalls = () => host.scripted.served.filter((s) => s.sessionId === session.id).length

  it('reopens once on confirm: one receipt, one reopened state, one follow-up turn; confirming again changes nothing', async () => {
    const done = await completeDiamond(host, session)
    await allIdle(host, session)
    const answer = await proposeRepair(host, session, ['b', 'c'])
    const [turnsBefore, callsBefore] = [await followups(session), mainCalls()]

    const outcome = await host.ctx.repair.confirm(session.id, bindingOf(answer))
    expect(outcome).to.deep.equal({ outcome: 'reopened', taskId: done.id, revision: done.revision + 1, acceptanceCycle: 2, affectedNodeIds: ['b', 'c', 'd'] })
    await allIdle(host, session)
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    expect(await followups(session)).to.equal(turnsBefore + 1)
    expect(mainCalls()).to.equal(callsBefore + 1)
    const turn = (await session.read({ from: 0, limit: 10000 })).filter((e) => e.type === 'user/message' && e.data.origin === 'controller').at(-1)!
    expect(turn.data.text).to.match(/acceptance cycle 2/).and.to.match(/Rework roots: b, c/).and.to.match(/b, c, d \(after b, c\)/)

    const [receipt] = await receipts(session)
    expect(receipt.data.payload).to.include({ proposalId: answer.proposalId, taskId: done.id, taskRevision: done.revision, source: 'web-confirmation' })
    const task = (await host.ctx.supervisor.state(session)).current!
    expect(task).to.include({ phase: 'active', acceptanceCycle: 2, reopenedFromProposalId: answer.proposalId })
    for (const id of ['b', 'c', 'd']) expect(task.nodeRuns[id]).to.deep.equal({ attempt: 2, status: 'pending', evidenceAfterSeq: receipt.seq })
    for (const id of ['a', 'e']) expect(task.nodeRuns[id]).to.deep.equal(done.nodeRuns[id])
    expect(task).not.to.have.any.keys('completionReview', 'completedAt')
    expect(task.repairHistory).to.have.length(1)
    await ok(host, session, 'write', { path: 'src/totals.ts', content: 'fixed\n' })

    const again = await host.ctx.repair.confirm(session.id, bindingOf(answer))
    expect(again).to.deep.equal({ ...outcome, outcome: 'already-applied' })
    await allIdle(host, session)
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    expect(await followups(session)).to.equal(turnsBefore + 1)
    expect(mainCalls()).to.equal(callsBefore + 1)
  })

  it('serializes concurrent confirms: one receipt, one reopen, one turn', async () => {
    await completeDiamond(host, session)
    await allIdle(host, session)
    const answer = await proposeRepair(host, session, ['d'])
    const before = await followups(session)
    const outcomes = await Promise.all([1, 2, 3].map(() => host.ctx.repair.confirm(session.id, bindingOf(answer))))
    expect(outcomes.map((o) => o.outcome).sort()).to.deep.equal(['already-applied', 'already-applied', 'reopened'])
    await allIdle(host, session)
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    expect(await followups(session)).to.equal(before + 1)
  })

  it('refuses with ARTIFACT_CHANGED when files changed after the proposal; a refreshed proposal confirms', async () => {
    await completeDiamond(host, session)
    const stale = await proposeRepair(host, session, ['b'])
    await writeFile(join(cwd, 'src/totals.ts'), 'changed behind the proposal\n')
    const error = await rejects(host.ctx.repair.confirm(session.id, bindingOf(stale)), 'ARTIFACT_CHANGED')
    expect(error.message).to.match(/changed since the proposal/).and.to.match(/propose again/)
    expect(await receipts(session)).to.have.length(0)
    expect((await host.ctx.supervisor.state(session)).current!.phase).to.equal('complete')

    const fresh = await proposeRepair(host, session, ['b'])
    expect((await host.ctx.repair.confirm(session.id, bindingOf(fresh))).outcome).to.equal('reopened')
    expect((await host.ctx.supervisor.state(session)).proposals.map((p) => p.status)).to.deep.equal(['superseded', 'applied'])
  })

  it('refuses with ACTIVE_TASK_CONFLICT while another task is live, writing nothing', async () => {
    const first = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    await host.ctx.commands.input(session, '/task new something else')
    const active = (await host.ctx.supervisor.state(session)).current!
    expect(active.id).to.not.equal(first.id)
    const before = session.seq
    const error = await rejects(host.ctx.repair.confirm(session.id, bindingOf(answer)), 'ACTIVE_TASK_CONFLICT')
    expect(error.details.activeTaskId).to.equal(active.id)
    expect(await records(session, REPAIR_NAMESPACE, 'confirm')).to.have.length(0)
    expect(session.seq).to.equal(before)
  })

  it('declines without an idle wait, keeps completion and write denied; a later proposal still works', async () => {
    const done = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['c'])
    expect(await host.ctx.repair.decline(session.id, bindingOf(answer))).to.deep.equal({ outcome: 'declined' })
    expect(await host.ctx.repair.decline(session.id, bindingOf(answer))).to.deep.equal({ outcome: 'already-declined' })
    const declines = await records(session, REPAIR_NAMESPACE, 'decline')
    expect(declines).to.have.length(1)
    expect(declines[0].data.payload.declinedAt).to.be.a('number')
    expect((await host.ctx.supervisor.state(session)).current).to.deep.equal(done)
    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'broken' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await fileIs(cwd, 'src/totals.ts', ORIGINAL)
    await rejects(host.ctx.repair.confirm(session.id, bindingOf(answer)), 'REPAIR_STALE')

    const later = await proposeRepair(host, session, ['c'], { reason: 'still wrong' })
    expect(later.outcome).to.equal('proposed')
    expect((await host.ctx.repair.confirm(session.id, bindingOf(later))).outcome).to.equal('reopened')
  })

  it('refuses stale bindings: unknown proposal, other revision, superseded proposal', async () => {
    const done = await completeDiamond(host, session)
    const first = await proposeRepair(host, session, ['b'])
    const second = await proposeRepair(host, session, ['c'])
    await rejects(host.ctx.repair.confirm(session.id, { ...bindingOf(second), proposalId: 'nope' }), 'REPAIR_STALE')
    await rejects(host.ctx.repair.confirm(session.id, { ...bindingOf(second), revision: done.revision - 1 }), 'REPAIR_STALE')
    await rejects(host.ctx.repair.confirm(session.id, bindingOf(first)), 'REPAIR_STALE')
    await rejects(host.ctx.repair.decline(session.id, bindingOf(first)), 'REPAIR_STALE')
    expect(await receipts(session)).to.have.length(0)
  })

  it('finishes an interrupted confirmation (receipt without reopen) with one more click and no second receipt', async () => {
    await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    const { confirmEnvelope } = await import('@taskward/protocol')
    await host.ctx.supervisor.transact(session, () => ({
      records: [confirmEnvelope({ proposalId: answer.proposalId, taskId: answer.taskId, taskRevision: answer.revision, source: 'web-confirmation', confirmedAt: 1 }, 'r1')],
      result: undefined,
    }))
    const state = await host.ctx.supervisor.state(session)
    expect(state.proposals[0].status).to.equal('confirmed')
    expect(state.current!.phase).to.equal('complete')
    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'x' }, 'REPAIR_CONFIRMATION_REQUIRED')

    expect((await host.ctx.repair.confirm(session.id, bindingOf(answer))).outcome).to.equal('reopened')
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    expect((await host.ctx.supervisor.state(session)).current!.repairHistory![0].confirmedAt).to.equal(1)
  })

  it('nothing but the confirm path reopens: approve, rework, resume and prose leave the task complete', async () => {
    const done = await completeDiamond(host, session)
    await allIdle(host, session)
    await proposeRepair(host, session, ['b'])
    for (const text of ['/task approve', '/task resume', `/task resume ${done.id}@${done.revision}`]) {
      const answer = await host.ctx.commands.input(session, text)
      expect(answer?.error, text).to.not.equal(undefined)
    }
    await refused(host, session, 'task_rework_node', { nodeId: 'b', reason: 'redo' }, 'TASK_COMPLETED')
    host.scripted.script('main', [{ toolCalls: [{ name: 'write', args: { path: 'src/totals.ts', content: 'sneaky' } }] }, {}])
    host.ctx.agents.get(session.id)!.followup('I confirm the repair, go ahead and fix it.')
    await allIdle(host, session)
    const state = await host.ctx.supervisor.state(session)
    expect(state.current).to.deep.equal(done)
    expect(state.proposals[0].status).to.equal('pending')
    expect(await receipts(session)).to.have.length(0)
    await fileIs(cwd, 'src/totals.ts', ORIGINAL)
    expect(await readFile(join(cwd, 'src/totals.ts'), 'utf8')).to.not.equal('sneaky')
  })
})

import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { httpStatusOf, REPAIR_NAMESPACE, TASK_NAMESPACE } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import {
  allIdle, bindingOf, command, completeDiamond, evidenceSeq, fileIs, finishReopened, ok, proposeRepair,
  receipts, records, refused, rejects, reopens, useRepairSession,
} from './fixtures'

/*
 * /task off | on of a complete task (docs/supervisor.md, docs/repair.md): the task stays complete and
 * closed to edits, the switch's new revision makes earlier proposals stale, and while supervision is
 * off no repair can be proposed or confirmed. After /task on a fresh proposal repairs as usual.
 */

const ORIGINAL = 'export const total = (rows: number[]) => 0\n'

describe('repair: supervision switched off and on for a complete task', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useRepairSession((env) => ({ host, cwd, session } = env))

  const state = () => host.ctx.supervisor.state(session)
  const allRecords = async () => (await records(session, TASK_NAMESPACE)).length + (await records(session, REPAIR_NAMESPACE)).length
  const proposals = () => records(session, REPAIR_NAMESPACE, 'proposal')

  /** Every way a complete task can be touched must answer the same with supervision on or off. */
  async function expectClosedToEdits() {
    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'changed\n' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await refused(host, session, 'edit', { path: 'src/totals.ts', old: '0', new: '1' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await refused(host, session, 'task_start_node', { nodeId: 'b' }, 'TASK_COMPLETED')
    await ok(host, session, 'read', { path: 'src/totals.ts' })
    await fileIs(cwd, 'src/totals.ts', ORIGINAL)
  }

  it('/task off makes the pending proposal stale; while off nothing is proposed or confirmed and edits stay denied', async () => {
    const done = await completeDiamond(host, session)
    await allIdle(host, session)
    const pending = await proposeRepair(host, session, ['b'])
    expect(pending.revision).to.equal(done.revision)

    const reply = await command(host, session, '/task off')
    expect(reply).to.include({ taskId: done.id, revision: done.revision + 1, phase: 'complete' })
    expect(reply.message).to.match(/is off/).and.to.match(/stays complete and closed to edits/).and.to.match(/until \/task on/)
    expect((await state()).current).to.deep.equal({ ...done, enabled: false, revision: done.revision + 1 })
    expect((await state()).poisoned).to.equal(undefined)
    expect((await host.ctx.supervisor.status(session)).availableActions).to.deep.equal(['await-supervision-on'])
    // The same setting again writes nothing.
    const written = await allRecords()
    const again = await command(host, session, '/task off')
    expect(again.revision).to.equal(done.revision + 1)
    expect(again.message).not.to.match(/stale/)
    expect(await allRecords()).to.equal(written)

    const stale = await rejects(host.ctx.repair.confirm(session.id, bindingOf(pending)), 'REPAIR_STALE')
    expect(stale.message).to.match(/supervision is off/)
    expect(await receipts(session)).to.have.length(0)
    expect(await reopens(session)).to.have.length(0)
    expect(await allRecords()).to.equal(written)

    const seq = await evidenceSeq(host, session)
    const args = { title: 'rows', reason: 'row sums are off', rootNodeIds: ['b'], evidenceSeqs: [seq] }
    const disabled = await refused(host, session, 'task_propose_repair', args, 'SUPERVISOR_DISABLED')
    expect(disabled.message).to.match(/\/task on/)
    await refused(host, session, 'task_propose_repair', { ...args, revision: done.revision + 1 }, 'SUPERVISOR_DISABLED')
    await refused(host, session, 'task_propose_repair', { ...args, revision: done.revision }, 'REPAIR_STALE')
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    await refused(host, consultation, 'supervisor_propose_repair', args, 'SUPERVISOR_DISABLED')

    const response = await host.http.post(`/api/sessions/${session.id}/repair`,
      { action: 'propose', taskId: done.id, revision: done.revision + 1, reason: 'row sums are off', rootNodeIds: ['b'] })
    expect(response.status).to.equal(httpStatusOf('SUPERVISOR_DISABLED'))
    expect(await response.json()).to.include({ code: 'SUPERVISOR_DISABLED' })
    const click = await host.http.post(`/api/sessions/${session.id}/repair`, { action: 'confirm', ...bindingOf(pending) })
    expect(await click.json()).to.include({ code: 'REPAIR_STALE' })

    expect(await proposals()).to.have.length(1)
    expect(await allRecords()).to.equal(written)
    // The switch superseded it: it no longer shows as waiting for the user's decision.
    expect((await state()).proposals.map((t) => t.status)).to.deep.equal(['superseded'])
    await expectClosedToEdits()

    // A rebuilt projection reads the switch back, unpoisoned, and the proposal stays unconfirmable.
    await host.restart()
    session = await host.ctx.sessions.get(session.id)
    expect((await state()).poisoned).to.equal(undefined)
    expect((await state()).current).to.deep.equal({ ...done, enabled: false, revision: done.revision + 1 })
    await rejects(host.ctx.repair.confirm(session.id, bindingOf(pending)), 'REPAIR_STALE')
    await expectClosedToEdits()
  })

  it('after /task on the old proposal stays stale and a fresh one confirms and reopens as usual', async () => {
    const done = await completeDiamond(host, session)
    await allIdle(host, session)
    const old = await proposeRepair(host, session, ['b'])
    await command(host, session, '/task off')
    const reply = await command(host, session, '/task on')
    expect(reply).to.include({ taskId: done.id, revision: done.revision + 2, phase: 'complete' })
    expect(reply.message).to.match(/is on/).and.to.match(/propose the repair again/)
    expect((await state()).current).to.deep.equal({ ...done, revision: done.revision + 2 })
    await expectClosedToEdits()

    const stale = await rejects(host.ctx.repair.confirm(session.id, bindingOf(old)), 'REPAIR_STALE')
    expect(stale.message).not.to.match(/supervision is off/)
    expect(await receipts(session)).to.have.length(0)

    const fresh = await proposeRepair(host, session, ['b'])
    expect(fresh.revision).to.equal(done.revision + 2)
    const outcome = await host.ctx.repair.confirm(session.id, bindingOf(fresh))
    expect(outcome).to.deep.equal({
      outcome: 'reopened', taskId: done.id, revision: done.revision + 3, acceptanceCycle: 2, affectedNodeIds: ['b', 'd'],
    })
    await allIdle(host, session)
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
    const current = await state()
    expect(current.poisoned).to.equal(undefined)
    expect(current.proposals.map((t) => [t.proposal.id, t.status])).to.deep.equal([[old.proposalId, 'superseded'], [fresh.proposalId, 'applied']])
    const task = current.current!
    expect(task).to.include({ phase: 'active', enabled: true, acceptanceCycle: 2, reopenedFromProposalId: fresh.proposalId })
    expect(task.repairHistory).to.have.length(1)
    expect(task.repairHistory![0]).to.include({ proposalId: fresh.proposalId, previousCycle: 1, completedAt: done.completedAt })
    expect(task.repairHistory![0].previousRuns).to.deep.equal(done.nodeRuns)

    await ok(host, session, 'write', { path: 'src/totals.ts', content: 'export const total = (rows: number[]) => rows.length\n' })
    const again = await finishReopened(host, session, ['b', 'd'])
    expect(again).to.include({ acceptanceCycle: 2, enabled: true })
    expect(again.repairHistory).to.have.length(1)
  })
})

import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  allIdle, bindingOf, bootRepair, command, completeDiamond, completedTask, finishReopened, followups, mainSession,
  proposeRepair, receipts, reopens, until, workspace,
} from './fixtures'

describe('repair: cycles, history and restart', () => {
  let host: TestHost
  let cwd: string
  let session: Session

  beforeEach(async () => {
    host = await bootRepair()
    cwd = await workspace()
    session = await mainSession(host, cwd)
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('two repair cycles and an unrelated task: shared descendants advance once, history stays unique', async () => {
    const done = await completeDiamond(host, session)
    const first = await proposeRepair(host, session, ['b', 'c'])
    await host.ctx.repair.confirm(session.id, bindingOf(first))
    let task = (await host.ctx.supervisor.state(session)).current!
    expect(task.nodeRuns.d.attempt).to.equal(2)
    expect(task.nodeRuns.a).to.deep.equal(done.nodeRuns.a)
    expect(task.nodeRuns.e).to.deep.equal(done.nodeRuns.e)
    const cycle2 = await finishReopened(host, session, ['b', 'c', 'd'])
    expect(cycle2.acceptanceCycle).to.equal(2)
    expect(cycle2.completedAt).to.be.a('number')

    await allIdle(host, session)
    const other = await completedTask(host, session, 'an unrelated objective')
    let state = await host.ctx.supervisor.state(session)
    expect(state.current!.id).to.equal(other.id)
    expect(state.history.map((t) => t.id)).to.deep.equal([done.id])

    // Repair the historical task: it returns, the unrelated terminal task is archived.
    const second = await proposeRepair(host, session, ['a'], { taskId: done.id, revision: cycle2.revision })
    const outcome = await host.ctx.repair.confirm(session.id, bindingOf(second))
    expect(outcome).to.include({ outcome: 'reopened', taskId: done.id, revision: cycle2.revision + 1, acceptanceCycle: 3 })
    expect(outcome.affectedNodeIds).to.deep.equal(['a', 'b', 'c', 'd'])
    state = await host.ctx.supervisor.state(session)
    task = state.current!
    expect(task.id).to.equal(done.id)
    expect(task.nodeRuns.d.attempt).to.equal(3)
    expect(task.nodeRuns.e).to.deep.equal(done.nodeRuns.e)
    expect(task.repairHistory).to.have.length(2)
    expect(task.repairHistory!.map((h) => h.previousCycle)).to.deep.equal([1, 2])
    expect(task.repairHistory![1].completedAt).to.equal(cycle2.completedAt)
    expect(state.history.map((t) => t.id)).to.deep.equal([other.id])
    expect(await receipts(session)).to.have.length(2)
    expect(await reopens(session)).to.have.length(2)
  })

  it('restores proposals after a restart without applying them; after a reopen and a restart, /task resume continues', async () => {
    const done = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['e'])
    await host.restart()
    session = await host.ctx.sessions.get(session.id)
    let state = await host.ctx.supervisor.state(session)
    expect(state.current).to.deep.equal(done)
    expect(state.proposals.map((p) => [p.proposal.id, p.status])).to.deep.equal([[answer.proposalId, 'pending']])

    expect((await host.ctx.repair.confirm(session.id, bindingOf(answer))).outcome).to.equal('reopened')
    await allIdle(host, session)
    await host.restart()
    session = await host.ctx.sessions.get(session.id)
    state = await host.ctx.supervisor.state(session)
    expect(state.current).to.include({ phase: 'active', acceptanceCycle: 2 })
    expect(state.proposals[0].status).to.equal('applied')
    const status = await host.ctx.supervisor.status(session)
    expect(status.controller).to.include({ armed: false, awaitingManualResume: true })
    const before = await followups(session)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await followups(session)).to.equal(before)
    expect(host.ctx.agents.get(session.id)).to.equal(undefined)

    await command(host, session, '/task resume')
    await until(async () => (await followups(session)) === before + 1, 'the resumed follow-up turn')
    // Confirming the applied proposal after the restart still wakes nothing.
    await allIdle(host, session)
    expect((await host.ctx.repair.confirm(session.id, bindingOf(answer))).outcome).to.equal('already-applied')
    expect(await followups(session)).to.equal(before + 1)
  })
})

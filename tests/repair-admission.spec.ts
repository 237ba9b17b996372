import { expect } from 'chai'
import type { Session } from '@taskward/host'
import {
  REPAIR_NAMESPACE, RECORD_EVENT_TYPE, confirmEnvelope, reopenTask, taskStateEnvelope, type RepairProposal,
} from '@taskward/protocol'
import { TestHost, removeTree } from '@taskward/testkit'
import {
  bootRepair, completeDiamond, mainSession, proposeRepair, repairPlugins, until, workspace,
} from '../plugins/repair/tests/fixtures'
import { RepairPlugin } from '../plugins/repair/src'

/*
 * The repair namespace and reader admission, and the projection's refusal of forged reopenings.
 */

describe('repair: reader admission and forged records', () => {
  let host: TestHost
  let cwd: string
  let session: Session

  beforeEach(async () => { cwd = await workspace() })
  afterEach(async () => {
    await host?.dispose()
    await removeTree(cwd)
  })

  const repairReaders = () => host.ctx.admission.readers().filter((r) => r.namespace === REPAIR_NAMESPACE)

  it('registers the repair reader once, owned by the repair plugin', async () => {
    host = await bootRepair()
    expect(repairReaders().map((r) => `${r.minVersion}-${r.maxVersion}`)).to.deep.equal(['1-1'])
    host.ctx.registry.delete(RepairPlugin)
    await until(() => repairReaders().length === 0, 'the repair reader to be withdrawn')
  })

  it('refuses resume and steps of a session holding repair records when no repair reader is registered', async () => {
    host = await bootRepair()
    session = await mainSession(host, cwd)
    await completeDiamond(host, session)
    await proposeRepair(host, session, ['b'])
    const first = host
    await first.stop()
    host = await TestHost.boot({ plugins: repairPlugins().slice(0, -1), waitFor: ['supervisor', 'admission'], dataDir: first.dataDir })
    try {
      const refusal = await host.ctx.admission.refusal(session.id)
      expect(refusal?.code).to.equal('READER_UNAVAILABLE')
      expect(refusal?.message).to.include(`${REPAIR_NAMESPACE} v1`)
      await host.ctx.agents.resume(session.id).then(() => expect.fail('resume should be refused'), (error) => expect(error.code).to.equal('READER_UNAVAILABLE'))
    } finally {
      await host.dispose()
      host = first
    }
  })

  it('after a restart, a confirm click on a session no loaded reader can read is refused before anything is written', async () => {
    host = await bootRepair()
    session = await mainSession(host, cwd)
    const done = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    // A record of a plugin this host does not have (the supervisor's fold ignores other namespaces).
    await session.append(RECORD_EVENT_TYPE, { namespace: 'dsh-future-plugin', schemaVersion: 1, kind: 'note', recordId: 'n1', payload: {} })
    await host.restart()
    const before = (await (await host.ctx.sessions.get(session.id)).read({ from: 0, limit: 10_000 })).length
    const click = await host.http.post(`/api/sessions/${session.id}/repair`, { action: 'confirm', proposalId: answer.proposalId, taskId: done.id, revision: done.revision })
    expect(click.status).to.equal(503)
    expect(await click.json()).to.deep.include({ code: 'READER_UNAVAILABLE' })
    const after = await (await host.ctx.sessions.get(session.id)).read({ from: 0, limit: 10_000 })
    expect(after).to.have.length(before)
    expect((await host.ctx.supervisor.state(session.id)).current).to.deep.include({ phase: 'complete', revision: done.revision })
  })

  it('refuses a repair record of schema 2 (READER_UNAVAILABLE on resume and on every step) and poisons the projection', async () => {
    host = await bootRepair()
    session = await mainSession(host, cwd)
    const done = await completeDiamond(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    const future = await session.append(RECORD_EVENT_TYPE, {
      namespace: REPAIR_NAMESPACE, schemaVersion: 2, kind: 'confirm', recordId: 'from-a-newer-plugin',
      payload: { proposalId: answer.proposalId, taskId: done.id, taskRevision: done.revision, source: 'web-confirmation', confirmedAt: 1 },
    })
    const refusal = await host.ctx.admission.refusal(session)
    expect(refusal?.code).to.equal('READER_UNAVAILABLE')
    expect(refusal?.message).to.include(`${REPAIR_NAMESPACE} v2`)
    await host.ctx.agents.resume(session.id).then(() => expect.fail('resume should be refused'), (error) => expect(error.code).to.equal('READER_UNAVAILABLE'))
    host.ctx.agents.get(session.id)!.followup('carry on')
    await until(async () => (await session.read({ from: future.seq, limit: 50 })).some((e) => e.type === 'agent/refused'), 'the refused step')
    const refused = (await session.read({ from: future.seq, limit: 50 })).find((e) => e.type === 'agent/refused')!
    expect(refused.data.code).to.equal('READER_UNAVAILABLE')
    const state = await host.ctx.supervisor.state(session)
    expect(state.poisoned?.seq).to.equal(future.seq)
    expect(state.current).to.deep.equal(done)
  })

  describe('forged complete → active records', () => {
    let proposal: RepairProposal
    let done: Awaited<ReturnType<typeof completeDiamond>>

    beforeEach(async () => {
      host = await bootRepair()
      session = await mainSession(host, cwd)
      done = await completeDiamond(host, session)
      const answer = await proposeRepair(host, session, ['b'])
      proposal = (await host.ctx.supervisor.state(session)).proposals.find((p) => p.proposal.id === answer.proposalId)!.proposal
    })

    const receipt = { source: 'web-confirmation' as const, confirmedAt: 5 }

    it('are refused by transact (TASK_INVALID, nothing written) without a receipt', async () => {
      const forged = reopenTask(done, proposal, { proposalId: proposal.id, taskId: done.id, taskRevision: done.revision, ...receipt, seq: session.seq })
      const seq = session.seq
      await host.ctx.supervisor.transact(session, () => ({ records: [taskStateEnvelope(forged)], result: undefined }))
        .then(() => expect.fail('should be refused'), (error) => expect(error.code).to.equal('TASK_INVALID'))
      expect(session.seq).to.equal(seq)
    })

    it('poison the projection when appended without a receipt', async () => {
      const forged = reopenTask(done, proposal, { proposalId: proposal.id, taskId: done.id, taskRevision: done.revision, ...receipt, seq: session.seq })
      const event = await session.append(RECORD_EVENT_TYPE, taskStateEnvelope(forged))
      const state = await host.ctx.supervisor.state(session)
      expect(state.poisoned?.seq).to.equal(event.seq)
      expect(state.poisoned?.message).to.match(/without a confirmed repair/)
      expect(state.current).to.deep.equal(done)
    })

    it('poison the projection when they differ from the recomputed reopen of the confirmed proposal', async () => {
      const confirm = await session.append(RECORD_EVENT_TYPE,
        confirmEnvelope({ proposalId: proposal.id, taskId: done.id, taskRevision: done.revision, ...receipt }, 'receipt-1'))
      const exact = reopenTask(done, proposal, { proposalId: proposal.id, taskId: done.id, taskRevision: done.revision, ...receipt, seq: confirm.seq })
      // The forger also reopens the independent node e.
      const forged = { ...exact, nodeRuns: { ...exact.nodeRuns, e: { attempt: 2, status: 'pending' as const, evidenceAfterSeq: confirm.seq } } }
      const event = await session.append(RECORD_EVENT_TYPE, taskStateEnvelope(forged))
      const state = await host.ctx.supervisor.state(session)
      expect(state.poisoned?.seq).to.equal(event.seq)
      expect(state.poisoned?.message).to.match(/not the exact transition/)
    })
  })
})

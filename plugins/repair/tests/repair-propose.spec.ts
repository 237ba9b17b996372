import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { REPAIR_NAMESPACE } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import {
  bootRepair, call, completeDiamond, evidenceSeq, fileIs, mainSession, ok, records, refused, workspace, useRepairSession,
} from './fixtures'

const ORIGINAL = 'export const total = (rows: number[]) => 0\n'

describe('repair: proposals', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useRepairSession((env) => ({ host, cwd, session } = env))

  const propose = (args: Record<string, unknown>, on = session) => ok(host, on, 'task_propose_repair', args)

  it('records a main-agent proposal with its impact, keeps the task complete and still denies write', async () => {
    const task = await completeDiamond(host, session)
    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'broken' }, 'REPAIR_CONFIRMATION_REQUIRED')
    const seq = await evidenceSeq(host, session)
    const answer = await propose({ title: 'row sums are wrong', reason: 'total() ignores its rows', rootNodeIds: ['b', 'c'], evidenceSeqs: [seq] })
    expect(answer).to.include({ outcome: 'proposed', taskId: task.id, revision: task.revision })
    expect(answer.affectedNodeIds).to.deep.equal(['b', 'c', 'd'])

    const [record] = await records(session, REPAIR_NAMESPACE, 'proposal')
    expect(record.data.payload).to.include({ id: answer.proposalId, source: 'main-agent', proposerSessionId: session.id, taskRevision: task.revision })
    expect(record.data.payload.proposedSeq).to.equal(record.seq)
    expect(record.data.payload.artifact.digest).to.match(/^[a-f0-9]{64}$/)
    const state = await host.ctx.supervisor.state(session)
    expect(state.current).to.deep.equal(task)
    expect(state.proposals.map((p) => p.status)).to.deep.equal(['pending'])

    await refused(host, session, 'write', { path: 'src/totals.ts', content: 'broken' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await fileIs(cwd, 'src/totals.ts', ORIGINAL)
  })

  it('task_status names the citable evidence of a complete task by seq (not its own answers), and a listed seq is accepted', async () => {
    const before = await ok(host, session, 'task_status', {})
    expect(before, 'no evidence list before completion').to.not.have.property('evidence')
    await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    await ok(host, session, 'task_status', {})
    const status = await ok(host, session, 'task_status', {})
    const listed = status.evidence as { seq: number, type: string, text: string }[]
    expect(listed.at(-1)).to.include({ seq, type: 'tool/result' })
    expect(listed.at(-1)!.text).to.match(/^read: /)
    expect(listed.every((e) => !e.text.startsWith('task_status')), 'task_status answers are not listed').to.equal(true)
    const answer = await propose({ title: 'row sums', reason: 'total() ignores its rows', rootNodeIds: ['b'], evidenceSeqs: [listed.at(-1)!.seq] })
    expect(answer.outcome).to.equal('proposed')
  })

  it('returns an identical pending proposal instead of writing another; a different one supersedes it', async () => {
    await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    const args = { title: 'row sums', reason: 'wrong rows', rootNodeIds: ['b'], evidenceSeqs: [seq] }
    const first = await propose(args)
    const again = await propose({ ...args, title: ' row sums ', rootNodeIds: ['b'], evidenceSeqs: [seq, seq] })
    expect(again).to.include({ outcome: 'identical-pending', proposalId: first.proposalId })
    expect(await records(session, REPAIR_NAMESPACE, 'proposal')).to.have.length(1)

    const other = await propose({ ...args, reason: 'wrong rows and columns', rootNodeIds: ['b', 'c'] })
    expect(other.outcome).to.equal('proposed')
    const state = await host.ctx.supervisor.state(session)
    expect(state.proposals.map((p) => [p.proposal.id, p.status])).to.deep.equal([[first.proposalId, 'superseded'], [other.proposalId, 'pending']])
  })

  it('refuses what is not a repair of a complete task, with coded errors and nothing written', async () => {
    const task = await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    const base = { title: 'defect', reason: 'a defect', rootNodeIds: ['b'], evidenceSeqs: [seq] }
    await refused(host, session, 'task_propose_repair', { ...base, rootNodeIds: [] }, 'INVALID_REPAIR_SCOPE')
    await refused(host, session, 'task_propose_repair', { ...base, rootNodeIds: ['b', 'b'] }, 'INVALID_REPAIR_SCOPE')
    await refused(host, session, 'task_propose_repair', { ...base, rootNodeIds: ['zz'] }, 'INVALID_REPAIR_SCOPE')
    await refused(host, session, 'task_propose_repair', { ...base, evidenceSeqs: [] }, 'REPAIR_EVIDENCE_INVALID')
    await refused(host, session, 'task_propose_repair', { ...base, evidenceSeqs: [seq - 1] }, 'REPAIR_EVIDENCE_INVALID') // a tool/call
    await refused(host, session, 'task_propose_repair', { ...base, evidenceSeqs: [99999] }, 'REPAIR_EVIDENCE_INVALID')
    await refused(host, session, 'task_propose_repair', { ...base, taskId: 'task-unknown' }, 'REPAIR_STALE')
    await refused(host, session, 'task_propose_repair', { ...base, taskId: task.id, revision: task.revision - 1 }, 'REPAIR_STALE')
    await refused(host, session, 'task_propose_repair', { ...base, title: 'x'.repeat(121) }, 'BAD_REQUEST')
    expect(await records(session, REPAIR_NAMESPACE)).to.have.length(0)
  })

  it('refuses a proposal for a task that is not complete (TASK_NOT_COMPLETE)', async () => {
    await host.ctx.commands.input(session, '/task new compute totals')
    const seq = await evidenceSeq(host, session)
    await refused(host, session, 'task_propose_repair', { title: 't', reason: 'r', rootNodeIds: ['a'], evidenceSeqs: [seq] }, 'TASK_NOT_COMPLETE')
  })

  it('records a consultation proposal in the main session with the consultation as proposer', async () => {
    await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    const args = { title: 'columns', reason: 'column sums are off', rootNodeIds: ['c'], evidenceSeqs: [seq] }
    const answer = await ok(host, consultation, 'supervisor_propose_repair', args)
    const [record] = await records(session, REPAIR_NAMESPACE, 'proposal')
    expect(record.data.payload).to.include({ id: answer.proposalId, source: 'consultation', proposerSessionId: consultation.id })
    expect(await records(consultation, REPAIR_NAMESPACE)).to.have.length(0)
    const status = await host.ctx.supervisor.status(session)
    expect(status.proposals[0]).to.include({ source: 'consultation', proposerSessionId: consultation.id })
  })

  it('answers a consultation\'s task_status with the main session\'s complete task and its citable evidence', async () => {
    await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    const status = await ok(host, consultation, 'task_status', {})
    expect(status.mainSessionId).to.equal(session.id)
    expect(status.task).to.include({ phase: 'complete' })
    expect(status.evidence.map((e: any) => e.seq)).to.include(seq)
  })

  it('refuses the wrong caller for each proposal tool, and offers no tool that confirms', async () => {
    await completeDiamond(host, session)
    const seq = await evidenceSeq(host, session)
    const args = { title: 't', reason: 'r', rootNodeIds: ['b'], evidenceSeqs: [seq] }
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    // The guard of linked sessions answers first on a complete task (and names supervisor_propose_repair).
    expect((await call(host, consultation, 'task_propose_repair', args)).error?.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')
    const helper = await host.ctx.sessions.create({ cwd, role: 'helper', parentId: session.id })
    await refused(host, helper, 'supervisor_propose_repair', args, 'FORBIDDEN')
    // The main agent may not use the consultation's tool (admission denies it on a complete task).
    expect((await call(host, session, 'supervisor_propose_repair', args)).error?.code).to.be.oneOf(['FORBIDDEN', 'REPAIR_CONFIRMATION_REQUIRED'])
    const names = host.ctx.tools.list().map((t) => t.name)
    expect(names.filter((n) => /reopen|confirm/.test(n))).to.deep.equal([])
    expect(await records(session, REPAIR_NAMESPACE)).to.have.length(0)
  })

  it('answers ARTIFACT_UNAVAILABLE without the workspace service', async () => {
    await host.dispose()
    // A host of this test's own: the suite's hooks dispose only the host they booted.
    const bare = await bootRepair({ workspace: false })
    try {
      const main = await mainSession(bare, cwd)
      await completeDiamond(bare, main)
      const seq = await evidenceSeq(bare, main)
      await refused(bare, main, 'task_propose_repair', { title: 't', reason: 'r', rootNodeIds: ['b'], evidenceSeqs: [seq] }, 'ARTIFACT_UNAVAILABLE')
    } finally {
      await bare.dispose()
    }
  })

  it('never poisons the session when another writer takes the seq a proposal expected (a second host on the store)', async () => {
    await completeDiamond(host, session)
    const task = (await host.ctx.supervisor.state(session)).current!
    // What a second host sharing the database does: it commits the next seq behind this host's back.
    await host.ctx.database.create('taskward_event', { sessionId: session.id, seq: session.seq, type: 'user/message', time: Date.now(), data: { text: 'hi', origin: 'user' } })
    const { outcome, proposal } = await host.ctx.repair.propose(session.id, {
      taskId: task.id, revision: task.revision, title: 'totals', reason: 'the totals are wrong', rootNodeIds: ['b'], evidenceSeqs: [], source: 'user',
    })
    expect(outcome).to.equal('proposed')
    host.ctx.supervisor.forget()
    const state = await host.ctx.supervisor.state(session)
    expect(state.poisoned).to.equal(undefined)
    const stored = await session.event(proposal.proposedSeq)
    expect(stored?.data).to.deep.include({ namespace: 'dsh-task-supervisor-repair', kind: 'proposal', recordId: proposal.id })
    expect(state.proposals.at(-1)).to.deep.include({ status: 'pending' })
  })
  it('keeps a consultation session from editing the workspace of a completed task: it may read and propose', async () => {
    await completeDiamond(host, session)
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    const before = await readFile(join(cwd, 'src/totals.ts'), 'utf8')
    const write = await call(host, consultation, 'write', { path: 'src/totals.ts', content: 'edited by consultation\n' })
    expect(write.error?.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')
    expect(await readFile(join(cwd, 'src/totals.ts'), 'utf8')).to.equal(before)
    expect((await call(host, consultation, 'read', { path: 'src/totals.ts' })).error).to.equal(undefined)
    expect((await call(host, consultation, 'unknown_shell', { cmd: 'rm -rf .' })).error?.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')
  })
  it('holds a session a consultation started (its sub-agent) to the main task too: no write after completion, no proposal', async () => {
    await completeDiamond(host, session)
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    // A DSH sub-agent of the consultation names the consultation as its parent, not the main session.
    const child = await host.ctx.sessions.create({ cwd, role: 'subagent', parentId: consultation.id })
    const grandchild = await host.ctx.sessions.create({ cwd, role: 'subagent', parentId: child.id })
    const before = await readFile(join(cwd, 'src/totals.ts'), 'utf8')
    for (const worker of [child, grandchild]) {
      const write = await call(host, worker, 'write', { path: 'src/totals.ts', content: 'edited by a consultation\'s sub-agent\n' })
      expect(write.error?.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')
      expect((await call(host, worker, 'read', { path: 'src/totals.ts' })).error).to.equal(undefined)
      const seq = await evidenceSeq(host, session)
      const propose = await call(host, worker, 'supervisor_propose_repair', { title: 't', reason: 'r', rootNodeIds: ['b'], evidenceSeqs: [seq] })
      expect(propose.error?.code).to.equal('FORBIDDEN')
    }
    expect(await readFile(join(cwd, 'src/totals.ts'), 'utf8')).to.equal(before)
    expect((await host.ctx.supervisor.state(session)).proposals).to.have.length(0)
  })
})

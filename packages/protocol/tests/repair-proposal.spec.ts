import { expect } from 'chai'
import { TaskwardError } from '../src/errors'
import {
  buildProposal, confirmEnvelope, declineEnvelope, proposalEnvelope, proposalIdentity, REPAIR_NAMESPACE, repairReader,
  sameProposal, sourceLabel, validateEvidence, type ProposalInput, type RepairProposal,
} from '../src/repair'
import { setEnabled, type Task } from '../src/task'
import { ARTIFACT, DIGEST, Driver, refuses } from './fixtures/task'

function setup(): { driver: Driver, task: Task, input: ProposalInput } {
  const driver = new Driver()
  driver.start('T')
  const task = driver.complete()
  const result = driver.log.append('tool/result', { output: 'FAIL d' }).seq
  const message = driver.log.append('user/message', { text: 'd is broken' }).seq
  const input: ProposalInput = {
    id: 'p1', task, source: 'consultation', proposerSessionId: 'consult-1', title: '  Fix the join  ', reason: 'd returns wrong totals',
    rootNodeIds: ['d', 'b'], evidenceSeqs: [message, result, message], events: driver.log.lookup, artifact: ARTIFACT,
    proposedAt: 123, proposedSeq: driver.log.nextSeq,
  }
  return { driver, task, input }
}

describe('repair proposals', () => {
  it('builds a proposal: trimmed title, impact in plan order, evidence unique and ascending, source kept', () => {
    const { task, input } = setup()
    const proposal = buildProposal(input)
    expect(proposal).to.deep.equal({
      id: 'p1', taskId: 'T', taskRevision: task.revision, source: 'consultation', proposerSessionId: 'consult-1',
      title: 'Fix the join', reason: 'd returns wrong totals', rootNodeIds: ['d', 'b'], affectedNodeIds: ['b', 'd'],
      evidenceSeqs: [input.evidenceSeqs[1], input.evidenceSeqs[0]], artifact: ARTIFACT, proposedAt: 123, proposedSeq: input.proposedSeq,
    })
  })

  it('leaves source and proposer absent when not given (no invented identity)', () => {
    const { input } = setup()
    const proposal = buildProposal({ ...input, source: undefined, proposerSessionId: undefined, evidenceSeqs: [] })
    expect(proposal).not.to.have.any.keys('source', 'proposerSessionId')
    expect(sourceLabel(proposal.source)).to.equal('source not recorded')
  })

  it('refuses a task that is not complete, and disabled supervision', () => {
    const { input } = setup()
    const driver = new Driver()
    const active = driver.start('U')
    refuses('TASK_NOT_COMPLETE', () => buildProposal({ ...input, task: active }))
    refuses('SUPERVISOR_DISABLED', () => buildProposal({ ...input, task: { ...input.task, enabled: false } }))
    // /task off on the complete task: still complete, and no proposal can be built for it.
    const off = setEnabled(input.task, { enabled: false }, { seq: 1, time: 1 })
    expect(off).to.include({ phase: 'complete', enabled: false, revision: input.task.revision + 1 })
    refuses('SUPERVISOR_DISABLED', () => buildProposal({ ...input, task: off }))
  })

  it('refuses empty, duplicate and unknown roots with INVALID_REPAIR_SCOPE', () => {
    const { input } = setup()
    refuses('INVALID_REPAIR_SCOPE', () => buildProposal({ ...input, rootNodeIds: [] }))
    refuses('INVALID_REPAIR_SCOPE', () => buildProposal({ ...input, rootNodeIds: ['b', 'b'] }))
    expect(refuses('INVALID_REPAIR_SCOPE', () => buildProposal({ ...input, rootNodeIds: ['b', 'zz'] })).message).to.match(/Unknown root nodes: zz/)
  })

  it('refuses bad titles, reasons and workspace stamps', () => {
    const { input } = setup()
    refuses('BAD_REQUEST', () => buildProposal({ ...input, title: '   ' }))
    refuses('BAD_REQUEST', () => buildProposal({ ...input, title: 'x'.repeat(121) }))
    expect(buildProposal({ ...input, title: 'x'.repeat(120) }).title).to.have.length(120)
    refuses('BAD_REQUEST', () => buildProposal({ ...input, reason: '' }))
    refuses('BAD_REQUEST', () => buildProposal({ ...input, reason: 'r'.repeat(10001) }))
    refuses('BAD_REQUEST', () => buildProposal({ ...input, artifact: { ...ARTIFACT, digest: 'XYZ' } }))
  })

  it('validates evidence: main-session tool results and messages before the proposal only', () => {
    const { driver, input } = setup()
    const call = driver.log.append('tool/call', { name: 'read' }).seq
    const record = driver.log.events.findIndex((e) => e.type === 'extension/record')
    expect(refuses('REPAIR_EVIDENCE_INVALID', () => validateEvidence([call], driver.log.lookup)).message).to.match(/is a tool\/call event/)
    refuses('REPAIR_EVIDENCE_INVALID', () => validateEvidence([record], driver.log.lookup))
    refuses('REPAIR_EVIDENCE_INVALID', () => validateEvidence([9999], driver.log.lookup))
    refuses('REPAIR_EVIDENCE_INVALID', () => validateEvidence([-1], driver.log.lookup))
    refuses('REPAIR_EVIDENCE_INVALID', () => validateEvidence([1.5], driver.log.lookup))
    const message = input.evidenceSeqs[0]
    refuses('REPAIR_EVIDENCE_INVALID', () => validateEvidence([message], driver.log.lookup, message))
    expect(validateEvidence([message, message], new Map(driver.log.events.map((e) => [e.seq, e])))).to.deep.equal([message])
  })

  it('sameProposal compares task, revision, digest, title, reason, roots and evidence, order-insensitively', () => {
    const { input } = setup()
    const proposal = buildProposal(input)
    const identity = proposalIdentity(proposal)
    expect(sameProposal(proposal, { ...identity, rootNodeIds: ['b', 'd'], evidenceSeqs: [...identity.evidenceSeqs].reverse() })).to.equal(true)
    expect(sameProposal(proposal, { ...identity, title: '  Fix the join ' })).to.equal(true)
    expect(sameProposal(proposal, { ...identity, rootNodeIds: ['d'] })).to.equal(false)
    expect(sameProposal(proposal, { ...identity, rootNodeIds: ['d', 'b', 'e'] })).to.equal(false)
    expect(sameProposal(proposal, { ...identity, evidenceSeqs: [] })).to.equal(false)
    expect(sameProposal(proposal, { ...identity, digest: 'cd'.repeat(32) })).to.equal(false)
    expect(sameProposal(proposal, { ...identity, taskRevision: identity.taskRevision + 1 })).to.equal(false)
    expect(sameProposal(proposal, { ...identity, reason: 'other' })).to.equal(false)
  })

  it('labels sources for the UI', () => {
    expect(sourceLabel('main-agent')).to.equal('main agent')
    expect(sourceLabel('consultation')).to.equal('consultation')
    expect(sourceLabel('user')).to.equal('user')
    expect(sourceLabel(undefined)).to.equal('source not recorded')
  })

  describe('records (schema 1)', () => {
    const proposal = (): RepairProposal => buildProposal(setup().input)

    it('round-trips proposal, confirm and decline; a decline carries declinedAt, not confirmedAt', () => {
      const p = proposal()
      expect(repairReader.read(proposalEnvelope(p), p.proposedSeq).payload).to.deep.equal(p)
      const confirm = confirmEnvelope({ proposalId: p.id, taskId: p.taskId, taskRevision: p.taskRevision, source: 'web-confirmation', confirmedAt: 5 }, 'c1')
      expect(repairReader.read(confirm, 1)).to.deep.include({ kind: 'confirm', recordId: 'c1' })
      const decline = declineEnvelope({ proposalId: p.id, taskId: p.taskId, taskRevision: p.taskRevision, source: 'web-confirmation', declinedAt: 6 }, 'd1')
      expect(decline.payload).to.have.property('declinedAt', 6)
      expect(decline.payload).not.to.have.property('confirmedAt')
      expect(repairReader.read(decline, 2).payload).to.deep.include({ declinedAt: 6 })
      expect(() => repairReader.read({ ...decline, payload: { ...decline.payload, declinedAt: undefined, confirmedAt: 6 } }, 2))
        .to.throw(TaskwardError).with.property('code', 'RECORD_UNSUPPORTED')
    })

    it('refuses malformed proposals and other versions', () => {
      const env = proposalEnvelope(proposal())
      const bad = (payload: object, schemaVersion = 1) => () => repairReader.read({ ...env, schemaVersion, payload: { ...env.payload, ...payload } }, 1)
      for (const fn of [
        bad({ title: ' padded' }), bad({ title: 'x'.repeat(121) }), bad({ rootNodeIds: [] }), bad({ evidenceSeqs: [-1] }),
        bad({ artifact: { ...ARTIFACT, digest: DIGEST.toUpperCase() } }), bad({ source: 'robot' }), bad({}, 2),
      ]) expect(fn).to.throw(TaskwardError).with.property('code', 'RECORD_UNSUPPORTED')
      expect(env.namespace).to.equal(REPAIR_NAMESPACE)
      expect(() => repairReader.read({ ...env, payload: { ...env.payload, source: 'web-confirmation' }, kind: 'confirm' }, 1)).to.throw(TaskwardError)
    })
  })
})

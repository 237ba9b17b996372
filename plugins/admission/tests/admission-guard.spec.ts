import { expect } from 'chai'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import type { Session } from '@taskward/host'
import Admission from '../src'
import { REPAIR, TASKS, appendRecord, controlledSession, readerPlugin, repairReader, tasksReader } from './fixtures'

interface StepOutcome {
  /** Model calls made for the session during this turn. */
  modelCalls: number
  refused?: { code: string, message: string }
}

/** Queue one turn on the session's agent and report whether the model ran or the step was refused. */
async function drive(host: TestHost, session: Session): Promise<StepOutcome> {
  const agent = host.ctx.agents.get(session.id) ?? await host.ctx.agents.create({ sessionId: session.id, model: 'scripted' })
  host.scripted.reset()
  host.scripted.script('main', [{ text: 'on it' }])
  const calls = () => host.scripted.served.filter((s) => s.sessionId === session.id).length
  const before = calls()
  const from = session.seq
  agent.followup('continue the task')
  await agent.whenIdle()
  const events = await session.read({ from })
  const refusal = events.find((e) => e.type === 'agent/refused')
  return { modelCalls: calls() - before, ...(refusal ? { refused: refusal.data } : {}) }
}

async function resumeRefusal(host: TestHost, sessionId: string) {
  try {
    await host.ctx.agents.resume(sessionId)
  } catch (error: any) {
    return error
  }
}

describe('admission: the host guard', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    cwd = await tempWorkspace({ 'README.md': 'hello' })
  })

  afterEach(async () => {
    await host?.dispose()
    await removeTree(cwd)
  })

  it('runs steps and resumes when every record has a reader', async () => {
    host = await TestHost.boot({ plugins: [[Admission], [readerPlugin(tasksReader(10))], [readerPlugin(repairReader)]], waitFor: ['admission'] })
    const session = await controlledSession(host.ctx, cwd)
    expect(await host.ctx.admission.check(session)).to.deep.equal([])
    expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
    const agent = await host.ctx.agents.resume(session.id)
    expect(agent.id).to.equal(session.id)
  })

  it('refuses resume and step naming v10 when the task reader reads only 1–9', async () => {
    host = await TestHost.boot({ plugins: [[Admission], [readerPlugin(tasksReader(9))], [readerPlugin(repairReader)]], waitFor: ['admission'] })
    const session = await controlledSession(host.ctx, cwd)
    expect(await host.ctx.admission.check(session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 10, firstSeq: 2 }])

    const outcome = await drive(host, session)
    expect(outcome.modelCalls).to.equal(0)
    expect(outcome.refused?.code).to.equal('READER_UNAVAILABLE')
    expect(outcome.refused?.message).to.contain(`${TASKS} v10`).and.match(/Install or enable a plugin/)
    expect(outcome.refused?.message).not.to.contain(`${TASKS} v9`)

    const error = await resumeRefusal(host, session.id)
    expect(error?.code).to.equal('READER_UNAVAILABLE')
    expect(error.details.missing).to.deep.equal([{ namespace: TASKS, schemaVersion: 10, firstSeq: 2 }])
  })

  it('refuses resume and step naming the repair namespace when no repair reader is loaded', async () => {
    host = await TestHost.boot({ plugins: [[Admission], [readerPlugin(tasksReader(10))]], waitFor: ['admission'] })
    const session = await controlledSession(host.ctx, cwd)
    const outcome = await drive(host, session)
    expect(outcome.modelCalls).to.equal(0)
    expect(outcome.refused?.code).to.equal('READER_UNAVAILABLE')
    expect(outcome.refused?.message).to.contain(`${REPAIR} v1`)
    expect((await resumeRefusal(host, session.id))?.code).to.equal('READER_UNAVAILABLE')
  })

  it('refuses again once the plugin that registered a reader is disposed, and admits when it is back', async () => {
    host = await TestHost.boot({ plugins: [[Admission], [readerPlugin(tasksReader(10))]], waitFor: ['admission'] })
    const repairFork = host.ctx.plugin(readerPlugin(repairReader))
    const session = await controlledSession(host.ctx, cwd)
    expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })

    repairFork.dispose()
    expect(host.ctx.admission.readers().map((r) => r.namespace)).to.deep.equal([TASKS])
    const outcome = await drive(host, session)
    expect(outcome).to.include({ modelCalls: 0 })
    expect(outcome.refused?.message).to.contain(`${REPAIR} v1`)
    expect((await resumeRefusal(host, session.id))?.code).to.equal('READER_UNAVAILABLE')

    host.ctx.plugin(readerPlugin(repairReader))
    expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
  })

  it('never refuses a session without extension records, even with no reader at all', async () => {
    host = await TestHost.boot({ plugins: [[Admission]], waitFor: ['admission'] })
    const session = await host.ctx.sessions.create({ cwd })
    await session.append('user/message', { text: 'hello' })
    await session.append('assistant/message', { text: 'hi' })
    expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
    expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
    expect((await host.ctx.agents.resume(session.id)).id).to.equal(session.id)
  })

  it('sees a record appended after the index was built (updated on append, not rescanned)', async () => {
    host = await TestHost.boot({ plugins: [[Admission], [readerPlugin(tasksReader(9))]], waitFor: ['admission'] })
    const session = await host.ctx.sessions.create({ cwd })
    await appendRecord(session, TASKS, 9)
    expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
    const cached = await host.ctx.projections.describe(session, 'admission/record-pairs')

    await appendRecord(session, TASKS, 10)
    const outcome = await drive(host, session)
    expect(outcome.modelCalls).to.equal(0)
    expect(outcome.refused?.message).to.contain(`${TASKS} v10`)
    // The refusal came from the in-memory index: the cached fold did not move.
    expect(await host.ctx.projections.describe(session, 'admission/record-pairs')).to.deep.equal(cached)
  })

  it('refuses a record event that is no envelope with RECORD_UNSUPPORTED and its seq', async () => {
    host = await TestHost.boot({ plugins: [[Admission]], waitFor: ['admission'] })
    const session = await host.ctx.sessions.create({ cwd })
    await session.append('user/message', { text: 'hello' })
    await session.append('extension/record', { kind: 'state', payload: {} })
    const outcome = await drive(host, session)
    expect(outcome.modelCalls).to.equal(0)
    expect(outcome.refused?.code).to.equal('RECORD_UNSUPPORTED')
    expect(outcome.refused?.message).to.contain('seq 1')
  })

  describe('across a restart', () => {
    it('catches the cached index up after a restart and refuses a record written after the last check', async () => {
      host = await TestHost.boot({ plugins: [[Admission], [readerPlugin(tasksReader(10))], [readerPlugin(repairReader)]], waitFor: ['admission'] })
      const session = await controlledSession(host.ctx, cwd)
      expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
      // Appended after the last check: the cached index is behind and must catch up after the restart.
      await appendRecord(session, 'downstream-notes', 2)
      // No cache yet (a session born here is indexed from its first event; its cache is written
      // persistEvery events on), or one behind the log.
      const before = await host.ctx.projections.describe(session, 'admission/record-pairs')
      expect(before?.asOfSeq ?? -1).to.be.below(6)
      const readers = host.ctx.admission.readers()

      await host.restart()
      expect(host.ctx.admission.readers().map((r) => r.namespace)).to.deep.equal(readers.map((r) => r.namespace))
      expect(await host.ctx.admission.check(session.id)).to.deep.equal([{ namespace: 'downstream-notes', schemaVersion: 2, firstSeq: 6 }])
      const error = await resumeRefusal(host, session.id)
      expect(error?.code).to.equal('READER_UNAVAILABLE')
      expect(error.message).to.contain('downstream-notes v2')

      const cached = await host.ctx.projections.describe(await host.ctx.sessions.get(session.id), 'admission/record-pairs')
      expect(cached).to.deep.equal({ version: 1, asOfSeq: 6 })
    })

    it('keeps refusing an older install (1–9 reader) after a restart, and admits a full one', async () => {
      const dataDir = await tempWorkspace({}, 'taskward-admission-')
      try {
        host = await TestHost.boot({ dataDir, plugins: [[Admission], [readerPlugin(tasksReader(10))], [readerPlugin(repairReader)]], waitFor: ['admission'] })
        const session = await controlledSession(host.ctx, cwd)
        expect(await drive(host, session)).to.deep.equal({ modelCalls: 1 })
        await host.dispose()

        host = await TestHost.boot({ dataDir, plugins: [[Admission], [readerPlugin(tasksReader(9))], [readerPlugin(repairReader)]], waitFor: ['admission'] })
        expect((await resumeRefusal(host, session.id))?.code).to.equal('READER_UNAVAILABLE')
        const reopened = await host.ctx.sessions.get(session.id)
        const outcome = await drive(host, reopened)
        expect(outcome.modelCalls).to.equal(0)
        expect(outcome.refused?.message).to.contain(`${TASKS} v10`)
        await host.dispose()

        host = await TestHost.boot({ dataDir, plugins: [[Admission], [readerPlugin(tasksReader(10))], [readerPlugin(repairReader)]], waitFor: ['admission'] })
        const agent = await host.ctx.agents.resume(session.id)
        expect(agent.state).to.equal('idle')
        expect(await drive(host, await host.ctx.sessions.get(session.id))).to.deep.equal({ modelCalls: 1 })
      } finally {
        await host.dispose()
        await removeTree(dataDir)
      }
    })
  })
})

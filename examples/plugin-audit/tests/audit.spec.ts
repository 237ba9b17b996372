import { expect } from 'chai'
import type { Session } from '@taskward/host'
import {
  callTool, driveToApproval, driveToCompletion, removeTree, runCommand, runTool, scriptReviewer, reviewsSettled, tempWorkspace, TestHost,
} from '@taskward/testkit'
import * as Audit from '../src'

const PLAN = { acceptanceCriteria: ['greets'], nodes: [{ id: 'a', title: 'write greeting' }] }

describe('example plugin: audit', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  let audit: ReturnType<TestHost['ctx']['plugin']>

  beforeEach(async () => {
    host = await TestHost.boot({ plugins: [['supervisor', { automaticContinuation: false }], 'admission'] })
    audit = host.ctx.plugin(Audit, { requireNote: true })
    cwd = await tempWorkspace({ 'README.md': '# greeting\n' })
    session = (await host.ctx.supervisor.startSession({ cwd })).session
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('records every transition in its own namespace and shows the trail with /task audit', async () => {
    await driveToApproval(host, session, { objective: 'greet', plan: PLAN })
    const reply = await runCommand(host, session, '/task audit')
    expect(reply.transitions).to.deep.equal(['1 created → planning', '2 review-requested → reviewing', '3 reviewed → awaiting-approval', '4 approved → active'])
    const records = (await session.read({ from: 0, limit: 1000 }))
      .filter((e) => e.type === 'extension/record' && e.data.namespace === Audit.AUDIT_NAMESPACE)
    expect(records.map((e) => e.data.payload.kind)).to.deep.equal(['created', 'review-requested', 'reviewed', 'approved'])
  })

  it('refuses completion with its own code and details until the task has a note', async () => {
    const task = await driveToApproval(host, session, { objective: 'greet', plan: PLAN })
    await runTool(host, session, 'task_start_node', { nodeId: 'a' })
    scriptReviewer(host, 'pass')
    await runTool(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    const refused = await callTool(host, session, 'task_request_completion')
    expect(refused.error).to.deep.include({ code: 'audit.note_missing', details: { taskId: task.id } })
    // What the console shows is the recorded tool result: the code and details are there intact.
    const recorded = (await session.read({ from: 0, limit: 1000 })).filter((e) => e.type === 'tool/result').at(-1)!
    expect(recorded.data.error).to.deep.equal(refused.error)

    await runCommand(host, session, '/task audit note reviewed by Ada')
    const done = await driveToCompletion(host, session)
    expect(done.phase).to.equal('complete')
    const trail = await runCommand(host, session, '/task audit')
    expect(trail.notes).to.deep.equal(['reviewed by Ada'])
    expect(trail.transitions.at(-1)).to.equal(`${done.revision} completed → complete`)
  })

  it('answers a wrong subcommand with audit.usage (400) and its details in the command reply', async () => {
    await runCommand(host, session, '/task new greet')
    const reply = await host.ctx.commands.input(session, '/task audit frobnicate')
    expect(reply!.error).to.deep.include({ code: 'audit.usage', details: { verb: 'frobnicate' } })
    const note = await host.ctx.commands.input(session, '/task audit note')
    expect(note!.error!.code).to.equal('audit.usage')
  })

  it('answers the same refusal over HTTP with its status, code and details at the top of the body', async () => {
    await runCommand(host, session, '/task new greet')
    const response = await host.http.post(`/api/sessions/${session.id}/input`, { text: '/task audit frobnicate' })
    expect(response.status).to.equal(400)
    const body = await response.json() as any
    expect(body).to.deep.include({ kind: 'command', code: 'audit.usage', details: { verb: 'frobnicate' } })
    expect(body.reply.error).to.deep.include({ code: 'audit.usage', details: { verb: 'frobnicate' } })
  })

  it('with requireNote off, completion needs no note; ignored kinds are not recorded', async () => {
    audit.dispose()
    host.ctx.plugin(Audit, { requireNote: false, ignore: ['node-started', 'review-requested'] })
    const done = await driveToCompletion(host, session, { plan: PLAN })
    expect(done.phase).to.equal('complete')
    const trail = await runCommand(host, session, '/task audit')
    expect(trail.transitions.some((t: string) => /node-started|review-requested/.test(t))).to.equal(false)
    expect(trail.transitions.at(-1)).to.match(/completed → complete$/)
  })

  it('once unloaded, admission refuses sessions that hold its records (READER_UNAVAILABLE)', async () => {
    await runCommand(host, session, '/task new greet')
    expect(await host.ctx.admission.refusal(session)).to.equal(undefined)
    audit.dispose()
    const refusal = await host.ctx.admission.refusal(session)
    expect(refusal?.code).to.equal('READER_UNAVAILABLE')
    expect(JSON.stringify(refusal?.details)).to.contain(Audit.AUDIT_NAMESPACE)
    // The gate and the subcommand left with the plugin.
    const reply = await host.ctx.commands.input(session, '/task audit')
    expect(reply!.error!.code).to.equal('TASK_INVALID')
  })
})

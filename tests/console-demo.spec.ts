import { expect } from 'chai'
import { mkdtemp, readFile, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { RepairPlugin } from '@taskward/plugin-repair'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { AdmissionService } from '@taskward/plugin-admission'
import { TestHost, removeTree } from '@taskward/testkit'
import { WebConsole } from '../plugins/console/src'
import { repairRecords } from './console-fixtures'

/** The `npm start` demo, booted for real in a temp data directory (the default demo location). */
describe('console demo', function () {
  this.timeout(60_000)
  let dataDir: string
  let host: TestHost
  const saved = process.env.TASKWARD_DATA

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'taskward-demo-'))
    process.env.TASKWARD_DATA = dataDir
  })
  afterEach(async () => {
    if (saved === undefined) delete process.env.TASKWARD_DATA
    else process.env.TASKWARD_DATA = saved
    await host?.dispose()
    await removeTree(dataDir)
  })

  const boot = (demo: boolean) => TestHost.boot({
    dataDir,
    // The plugin set of cordis.yml, so the demo is proven where `npm start` runs it (recovery included:
    // the demo task must pass its own validation check to complete).
    plugins: [[AdmissionService, {}], [WorkspacePlugin], [SupervisorPlugin, {}], [RepairPlugin, {}], [RecoveryPlugin, {}], [WebConsole, { demo }]],
    waitFor: ['admission', 'supervisor', 'workspace', 'recovery', 'webConsole'],
  })

  it('ends with a complete task, real files and a pending proposal citing a real tool result; never runs twice', async () => {
    host = await boot(true)
    const outcome = await host.ctx.webConsole.demo
    expect(outcome.status).to.equal('ready')
    if (outcome.status !== 'ready') return
    expect(outcome.directory).to.equal(join(dataDir, 'demo-workspace'))
    const state = await host.ctx.supervisor.state(outcome.sessionId)
    const task = state.current!
    expect(task.phase).to.equal('complete')
    expect(task.plan!.nodes.map((n) => n.id)).to.deep.equal(['core', 'en', 'de', 'cli'])
    expect(Object.values(task.nodeRuns).map((r) => r.status)).to.deep.equal(['passed', 'passed', 'passed', 'passed'])
    expect(state.reviews.map((job) => `${job.kind}:${job.verdict}`)).to.deep.equal(
      ['plan:pass', 'stage:pass', 'stage:pass', 'stage:pass', 'stage:pass', 'completion:pass'])
    expect(await readFile(join(outcome.directory, 'src', 'en.js'), 'utf8')).to.include('Hello, ${name}`')
    expect((await stat(join(outcome.directory, 'src', 'cli.js'))).isFile()).to.equal(true)

    const [tracked] = state.proposals
    expect(state.proposals).to.have.length(1)
    expect(tracked.status).to.equal('pending')
    expect(tracked.proposal).to.include({ id: outcome.proposalId, taskId: task.id, source: 'main-agent' })
    expect(tracked.proposal.affectedNodeIds).to.deep.equal(['en', 'cli'])
    const session = await host.ctx.sessions.get(outcome.sessionId)
    // The recovery controller ran the demo's check on a copy and promoted the candidate exactly once.
    const recoveryKinds: string[] = []
    for await (const event of session.events()) {
      if (event.type === 'extension/record' && event.data.namespace === 'dsh-task-supervisor-recovery') recoveryKinds.push(event.data.kind)
    }
    expect(recoveryKinds).to.include('checks')
    expect(recoveryKinds.filter((kind) => kind === 'receipt')).to.have.length(1)
    const evidence = await session.event(tracked.proposal.evidenceSeqs[0])
    expect(evidence).to.deep.include({ type: 'tool/result' })
    expect(evidence!.data).to.include({ name: 'read' })
    expect(host.scripted.pending('main')).to.equal(0)
    expect(host.scripted.pending('reviewer')).to.equal(0)

    // The console API opens on it: the proposal waits for the user's decision.
    const view = await host.http.json(`/api/console/sessions/${outcome.sessionId}/view`)
    expect(view.body.awaitingDecision).to.equal(outcome.proposalId)

    // A restart finds sessions and leaves everything as it was.
    const events = session.seq
    await host.restart()
    expect(await host.ctx.webConsole.demo).to.deep.equal({ status: 'skipped', reason: 'the database already holds sessions' })
    expect((await host.ctx.sessions.get(outcome.sessionId)).seq).to.equal(events)
    expect(await repairRecords(await host.ctx.sessions.get(outcome.sessionId), 'proposal')).to.have.length(1)
  })

  it('does nothing with demo off', async () => {
    host = await boot(false)
    expect(await host.ctx.webConsole.demo).to.deep.include({ status: 'skipped' })
    expect(await host.ctx.sessions.list()).to.deep.equal([])
    expect(await stat(join(dataDir, 'demo-workspace')).catch(() => undefined)).to.equal(undefined)
  })
})

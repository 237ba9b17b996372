import { expect } from 'chai'
import { TASK_SCHEMA_VERSION } from '@taskward/protocol'
import { mockText, type OpenAIMock } from '@taskward/testkit'
import { CARRIER_KIND } from '@taskward/dsh'
import { useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, carrierEvents, commandText, execute, replyJson, waitFor } from './dsh-api'

/*
 * M1/M2 against the real DSH host (0.1.0-rc.8, cached install): the packed bundle added with
 * `dsh plugin --profile web add`, `dsh web` started on a temporary DSH_HOME against a loopback
 * DeepSeek-compatible endpoint, everything driven through DSH's own HTTP API. One DSH per describe.
 */
describe('Taskward inside the real DSH host', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string

  // Turns the controller queues get a short answer (the tests here are not about the model).
  useDsh({ player: mockText('Noted; waiting for the user.'), workspace: 'ws' }, (dsh) => ({ model, home, web, workspace } = dsh))

  it('loads the bundle: Taskward\'s route answers with its own body under its prefix', async () => {
    const response = await fetch(`${web.origin}/taskward/health`)
    expect(response.status).to.equal(200)
    expect(await response.json()).to.deep.include({ ok: true, taskward: true, host: 'dsh', prefix: '/taskward' })
    // An unknown Taskward path is Taskward's JSON 404, not DSH's web app page.
    const unknown = await fetch(`${web.origin}/taskward/nothing-here`)
    expect(unknown.status).to.equal(404)
    expect(await unknown.json()).to.include({ code: 'NOT_FOUND' })
  })

  it('authenticates its own routes: no token is 401 with a code', async () => {
    const response = await fetch(`${web.origin}/taskward/api/sessions/whatever/repairs`)
    expect(response.status).to.equal(401)
    expect(await response.json()).to.include({ code: 'UNAUTHORIZED' })
  })

  it('answers /task through DSH\'s commands/execute with the supervisor\'s status, as text; --json gives the view', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    const result = await execute(web, sessionId, '/task')
    expect(result.kind, commandText(result)).to.equal('success')
    expect(commandText(result)).to.include('No task in this session.').and.include('Waiting for you: start a task with /task new <objective>.')
    expect(commandText(result)).to.not.include('```')
    const status = replyJson(await execute(web, sessionId, '/task status --json'))
    expect(status).to.have.property('controller')
    expect(status).to.not.have.property('statusText')
    expect(status.current ?? null).to.equal(null)
  })

  it('/task new writes the task\'s state record into DSH\'s log; after a DSH restart the same readers read it back', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    const created = replyJson(await execute(web, sessionId, '/task new Add a CLI'))
    expect(created).to.include({ revision: 1, phase: 'planning' })
    // The controller's follow-up turn ran on the loopback model (DSH's own loop).
    await waitFor(() => model.requests.length > 0, 'the controller\'s turn to reach the model')
    const before = replyJson(await execute(web, sessionId, '/task status --json'))
    expect(before.task).to.include({ id: created.taskId, phase: 'planning', revision: 1 })

    await web.stop()
    web = await home.start()

    // DSH reopens the session (the carrier is a type it knows) and our readers fold the record again.
    const history = await web.api('session.history', { sessionId })
    const records = carriedEvents(sessionId, history).filter((e) => e.type === 'extension/record') as { data: any }[]
    expect(records.map((e) => [e.data.namespace, e.data.schemaVersion, e.data.kind])).to.deep.equal([['dsh-task-supervisor', TASK_SCHEMA_VERSION, 'state']])
    const after = replyJson(await execute(web, sessionId, '/task status --json'))
    expect(after.task).to.include({ id: created.taskId, objective: 'Add a CLI', phase: 'planning', revision: 1 })
    // A restart never continues by itself: the task waits for /task resume.
    expect(after.controller).to.include({ armed: false, awaitingManualResume: true })
  })

  it('reads no record in a fork of a supervised session: DSH copies the parent\'s carriers, Taskward wrote none there', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Forked copy')
    await waitFor(async () => (await web.api('session.list', {})).items.some((s: any) => s.sessionId === sessionId && !s.running), 'the first turn to end')
    const { sessionId: fork } = await web.api('session.fork', { sessionId })
    const copied = (await web.api('session.history', { sessionId: fork })).events
      .filter(({ event }: any) => event.data?.inserted?.[0]?.source?.kind === CARRIER_KIND)
    expect(copied.length, 'DSH seeded the fork with the parent\'s carriers').to.be.greaterThan(0)
    expect(carriedEvents(fork, await web.api('session.history', { sessionId: fork }))).to.deep.equal([])
    const status = replyJson(await execute(web, fork, '/task status --json'))
    expect(status.task ?? null, 'the fork has no task of its own').to.equal(null)
  })

  it('refuses every step of a session holding a record no reader reads (READER_UNAVAILABLE), as on our host', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Forged future')
    await waitFor(async () => (await web.api('session.list', {})).items.some((s: any) => s.sessionId === sessionId && !s.running), 'the first turn to end')
    await web.stop()
    // A record of a schema version no installed reader reads (an older bundle meeting a newer log).
    await home.appendToLog(sessionId, carrierEvents(sessionId, 'extension/record', {
      namespace: 'dsh-task-supervisor', schemaVersion: TASK_SCHEMA_VERSION + 1, kind: 'state', recordId: 'future:1', payload: {},
    }))
    web = await home.start()
    const served = model.requests.length
    await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'carry on' }] })
    await waitFor(async () => carriedEvents(sessionId, await web.api('session.history', { sessionId })).some((e) => e.type === 'agent/refused'), 'the refusal in the log')
    const refusal = carriedEvents(sessionId, await web.api('session.history', { sessionId })).find((e) => e.type === 'agent/refused') as { data: any }
    expect(refusal.data.code).to.equal('READER_UNAVAILABLE')
    expect(model.requests.length, 'no model step ran').to.equal(served)
    // Commands still run (they are how a person fixes things) and name the refusal's cause.
    const status = await execute(web, sessionId, '/task')
    expect(status.kind).to.equal('success')
  })

  it('poisons on a forged carrier record of a read version whose payload is invalid: steps refused, /task names the seq', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Forged state')
    await waitFor(async () => (await web.api('session.list', {})).items.some((s: any) => s.sessionId === sessionId && !s.running), 'the first turn to end')
    await web.stop()
    // Version 10 is read, so admission lets it through; the supervisor's reader refuses its payload.
    await home.appendToLog(sessionId, carrierEvents(sessionId, 'extension/record', {
      namespace: 'dsh-task-supervisor', schemaVersion: 10, kind: 'state', recordId: 'forged:7', payload: { id: 'forged', revision: 7 },
    }))
    web = await home.start()
    const served = model.requests.length
    await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'carry on' }] })
    await waitFor(async () => carriedEvents(sessionId, await web.api('session.history', { sessionId })).some((e) => e.type === 'agent/refused'), 'the refusal in the log')
    const refusal = carriedEvents(sessionId, await web.api('session.history', { sessionId })).find((e) => e.type === 'agent/refused') as { data: any }
    expect(refusal.data.code).to.equal('SUPERVISOR_POISONED')
    expect(model.requests.length, 'no model step ran').to.equal(served)
    const status = replyJson(await execute(web, sessionId, '/task status --json'))
    expect(JSON.stringify(status)).to.match(/Supervisor record at seq \d+/)
  })
})

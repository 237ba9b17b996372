import { expect } from 'chai'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { mockText, OpenAIMock } from '@taskward/testkit'
import { DshHome, dshInstall, packedBundle, type DshWeb } from './dsh-host'
import { commandText, execute, replyJson } from './dsh-api'

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

  before(async function () {
    const found = await dshInstall()
    if (!found.paths) {
      console.log(`      skipped: ${found.skip}`)
      return this.skip()
    }
    const tarball = await packedBundle()
    model = await OpenAIMock.start()
    // Turns the controller queues get a short answer (the tests here are not about the model).
    model.fallback = mockText('Noted; waiting for the user.')
    home = await DshHome.create(found.paths, { baseURL: `http://127.0.0.1:${model.port}` })
    workspace = await mkdtemp(join(tmpdir(), 'taskward-dsh-ws-'))
    await home.addBundle(tarball)
    web = await home.start()
  })

  after(async () => {
    await web?.stop()
    await home?.dispose()
    await model?.close()
    if (workspace) await rm(workspace, { recursive: true, force: true })
  })

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

  it('answers /task through DSH\'s commands/execute with the supervisor\'s status', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    const result = await execute(web, sessionId, '/task')
    expect(result.kind, commandText(result)).to.equal('success')
    const status = replyJson(result)
    expect(status).to.have.property('controller')
    expect(status.current ?? null).to.equal(null)
  })
})

import { expect } from 'chai'
import type { Context } from 'cordis'
import { defineErrorCode, TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

const CHANGELOG_MISSING = defineErrorCode('acme.changelog_missing', 422)
const DETAILS = { file: 'CHANGELOG.md', hint: ['add an entry'] }
const refusal = () => new TaskwardError(CHANGELOG_MISSING, 'Add a CHANGELOG entry first.', DETAILS)

/** A plugin that refuses through every channel with its own code and details. */
const acme = {
  name: 'acme-refusals',
  inject: ['tools', 'commands', 'connection'],
  apply(ctx: Context) {
    ctx.tools.register({ name: 'acme_throw', description: 'always refuses', execute: () => { throw refusal() } })
    ctx.tools.register({ name: 'acme_guarded', description: 'denied by the guard', execute: () => 'ran' })
    ctx.tools.guard(({ name }) => name === 'acme_guarded'
      ? { deny: { code: CHANGELOG_MISSING, message: 'guarded', details: DETAILS } } : undefined)
    ctx.commands.register('acme', () => { throw refusal() })
    ctx.connection.register({ path: '/api/acme/refuse', methods: ['GET'], handler: () => { throw refusal() } })
  },
}

describe('host: coded errors keep their code and details on every channel', () => {
  let host: TestHost
  let cwd: string
  beforeEach(async () => {
    host = await TestHost.boot({ plugins: [[acme]] })
    cwd = await tempWorkspace()
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('tool results: a thrown refusal and a guard denial, as returned and as recorded', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    for (const [name, message] of [['acme_throw', 'Add a CHANGELOG entry first.'], ['acme_guarded', 'guarded']]) {
      const outcome = await host.ctx.tools.execute(session, name, {})
      expect(outcome.error, name).to.deep.equal({ code: CHANGELOG_MISSING, message, details: DETAILS })
      const recorded = (await session.read()).filter((e) => e.type === 'tool/result').at(-1)!
      expect(recorded.data.error).to.deep.equal(outcome.error)
    }
  })

  it('command replies: the recorded command/reply carries the details', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    const reply = await host.ctx.commands.input(session, '/acme')
    expect(reply!.error).to.deep.equal({ code: CHANGELOG_MISSING, message: 'Add a CHANGELOG entry first.', details: DETAILS })
    const recorded = (await session.read()).find((e) => e.type === 'command/reply')!
    expect(recorded.data.error).to.deep.equal(reply!.error)
  })

  it('HTTP bodies: the host answers {error, code, details} with the status the plugin defined', async () => {
    const { status, body } = await host.http.json('/api/acme/refuse')
    expect(status).to.equal(422)
    expect(body).to.deep.equal({ error: 'Add a CHANGELOG entry first.', code: CHANGELOG_MISSING, details: DETAILS })
  })

  it('HTTP bodies: a refusal without details has no details key', async () => {
    const { status, body } = await host.http.json('/api/nothing-here')
    expect(status).to.equal(404)
    expect(body).to.have.keys('error', 'code')
  })
})

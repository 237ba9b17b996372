import { expect } from 'chai'
import type { Context } from 'cordis'
import { mkdir, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { TaskwardError } from '@taskward/protocol'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { bootOperatorHost, createSession, until, type OperatorHost } from './operator-fixtures'

/** The operator's controls over HTTP (docs/host.md, "Operator routes") against a real host. */
describe('operator routes over HTTP', function () {
  this.timeout(30_000)
  let op: OperatorHost
  beforeEach(async () => {
    op = await bootOperatorHost([[SupervisorPlugin, { automaticContinuation: false }]], ['supervisor'])
  })
  afterEach(async () => { await op.dispose() })

  const http = () => op.host.http
  /** The client may still hold a keep-alive socket the stopped server closed: one retry on a refused socket. */
  const afterRestart = async (send: () => Promise<Response>) => send().catch(() => send())
  const events = async (id: string) => (await (await op.host.ctx.sessions.get(id)).read({ limit: 10000 }))

  describe('access', () => {
    it('refuses requests without a token (401), with a session token on operator routes or another session (403), and foreign Origins (403)', async () => {
      const id = await createSession(op.host, { cwd: 'one', create: true })
      const other = await createSession(op.host, { cwd: 'two', create: true })
      expect((await http().post('/api/sessions', { cwd: 'x' }, { token: null })).status).to.equal(401)
      expect((await http().fetch(`/api/sessions/${id}/events`, { token: null })).status).to.equal(401)
      const token = op.host.ctx.connection.issueSessionToken(id)
      const asSession = await http().post('/api/sessions', { cwd: 'x', create: true }, { token })
      expect(asSession.status).to.equal(403)
      expect(((await asSession.json()) as any).code).to.equal('FORBIDDEN')
      expect((await http().post(`/api/sessions/${other}/input`, { text: 'hi' }, { token })).status).to.equal(403)
      expect((await http().fetch(`/api/sessions/${other}/events`, { token })).status).to.equal(403)
      expect((await http().fetch('/api/operator', { token })).status).to.equal(403)
      // Its own session is open to it.
      expect((await http().fetch(`/api/sessions/${id}/events`, { token })).status).to.equal(200)
      expect((await http().fetch(`/api/sessions/${id}/queue`, { token })).status).to.equal(200)
      const foreign = await http().post(`/api/sessions/${id}/input`, { text: 'hi' }, { origin: 'http://evil.example' })
      expect(foreign.status).to.equal(403)
      expect((await events(id)).filter((e) => e.type === 'user/message')).to.have.length(0)
    })

    it('lists the workspace roots, model routes and commands for the operator', async () => {
      const { status, body } = await http().json('/api/operator')
      expect(status).to.equal(200)
      expect(body.workspaceRoots).to.deep.equal([op.root])
      expect(body.defaultModel).to.equal('scripted')
      expect(body.models).to.include.members(['scripted', 'test-stream', 'test-hold'])
      expect(body.commands).to.include('task')
    })
  })

  describe('POST /api/sessions', () => {
    it('creates a session with its main agent on the default model inside the root', async () => {
      await mkdir(join(op.root, 'project'))
      const response = await http().post('/api/sessions', { cwd: 'project' })
      expect(response.status).to.equal(201)
      const body = await response.json() as any
      expect(body.session).to.include({ cwd: join(op.root, 'project'), role: 'main', model: 'scripted' })
      expect(body.agent).to.include({ model: 'scripted', role: 'main', state: 'idle' })
      expect(op.host.ctx.agents.get(body.session.id)).to.not.equal(undefined)
      // An absolute path inside the root works too, and a model route may be chosen.
      const chosen = await (await http().post('/api/sessions', { cwd: join(op.root, 'project'), model: 'test-stream' })).json() as any
      expect(chosen.session.model).to.equal('test-stream')
    })

    it('creates a missing directory only when asked', async () => {
      const missing = await http().post('/api/sessions', { cwd: 'new/deeper' })
      expect(missing.status).to.equal(404)
      expect(((await missing.json()) as any).error).to.include('create')
      await stat(join(op.root, 'new')).then(() => expect.fail('nothing may be created'), () => {})
      const created = await http().post('/api/sessions', { cwd: 'new/deeper', create: true })
      expect(created.status).to.equal(201)
      expect((await stat(join(op.root, 'new', 'deeper'))).isDirectory()).to.equal(true)
    })

    it('refuses directories outside the workspace roots: elsewhere, `..`, and symlinks that lead out', async () => {
      const refused = async (body: Record<string, unknown>) => {
        const response = await http().post('/api/sessions', body)
        const json = await response.json() as any
        expect(response.status, JSON.stringify(json)).to.equal(403)
        expect(json.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      }
      await refused({ cwd: op.outside })
      await refused({ cwd: '../outside' })
      await refused({ cwd: `${op.root}/../outside` })
      await refused({ cwd: 'a/../../outside', create: true })
      await symlink(op.outside, join(op.root, 'link'))
      await refused({ cwd: 'link' })
      await refused({ cwd: join(op.root, 'link') })
      // Creating below a link that leads out must not create anything out there.
      await refused({ cwd: 'link/made-outside', create: true })
      await stat(join(op.outside, 'made-outside')).then(() => expect.fail('created outside the root'), () => {})
      expect(await op.host.ctx.sessions.list()).to.have.length(0)
    })

    it('accepts a directory whose name merely starts with two dots (`..cache`, `...`): it lies inside the root', async () => {
      for (const name of ['..cache', '...']) {
        await mkdir(join(op.root, name))
        const response = await http().post('/api/sessions', { cwd: name })
        const json = await response.json() as any
        expect(response.status, `${name} → ${JSON.stringify(json)}`).to.equal(201)
        expect(json.session.cwd).to.equal(join(op.root, name))
      }
      const created = await http().post('/api/sessions', { cwd: '..new/sub', create: true })
      expect(created.status).to.equal(201)
      expect((await stat(join(op.root, '..new', 'sub'))).isDirectory()).to.equal(true)
    })

    it('refuses a working directory inside a .git directory (PATH_FORBIDDEN): the file tools would write hooks git runs', async () => {
      await mkdir(join(op.root, 'proj', '.git', 'hooks'), { recursive: true })
      await symlink(join(op.root, 'proj', '.git'), join(op.root, 'innocent'))
      for (const body of [{ cwd: 'proj/.git' }, { cwd: 'proj/.git/hooks' }, { cwd: 'proj/.GIT' }, { cwd: 'innocent' }, { cwd: 'innocent/made', create: true }, { cwd: 'other/.git', create: true }]) {
        const response = await http().post('/api/sessions', body)
        const json = await response.json() as any
        expect(response.status, `${JSON.stringify(body)} → ${JSON.stringify(json)}`).to.equal(403)
        expect(json.code).to.equal('PATH_FORBIDDEN')
      }
      await stat(join(op.root, 'other', '.git')).then(() => expect.fail('nothing may be created'), () => {})
      await stat(join(op.root, 'proj', '.git', 'made')).then(() => expect.fail('nothing may be created in .git'), () => {})
      expect(await op.host.ctx.sessions.list()).to.have.length(0)
      // The repository itself is fine.
      expect((await http().post('/api/sessions', { cwd: 'proj' })).status).to.equal(201)
    })

    it('answers link loops, dangling links and files in the way with coded 400s, creating nothing', async () => {
      await symlink(join(op.root, 'loop-b'), join(op.root, 'loop-a'))
      await symlink(join(op.root, 'loop-a'), join(op.root, 'loop-b'))
      await symlink(join(op.outside, 'not-yet'), join(op.root, 'dangling'))
      await writeFile(join(op.root, 'file'), 'x')
      for (const body of [{ cwd: 'loop-a' }, { cwd: 'loop-a/x', create: true }, { cwd: 'dangling' }, { cwd: 'dangling', create: true },
        { cwd: 'dangling/sub', create: true }, { cwd: 'file' }, { cwd: 'file/sub', create: true }]) {
        const response = await http().post('/api/sessions', body)
        const json = await response.json() as any
        expect(response.status, `${JSON.stringify(body)} → ${JSON.stringify(json)}`).to.be.oneOf([400, 403])
        expect(json.code).to.be.oneOf(['BAD_REQUEST', 'PATH_OUTSIDE_WORKSPACE'])
        if (json.code === 'BAD_REQUEST') expect(json.error).to.match(/^cwd: /)
      }
      await stat(join(op.outside, 'not-yet')).then(() => expect.fail('created through a dangling link'), () => {})
      expect(await op.host.ctx.sessions.list()).to.have.length(0)
    })

    it('validates the body with coded 400s naming the field', async () => {
      const bad = async (body: unknown, field: string) => {
        const response = await http().post('/api/sessions', body as any)
        const json = await response.json() as any
        expect(response.status, JSON.stringify(json)).to.equal(400)
        expect(json.code).to.equal('BAD_REQUEST')
        expect(json.error).to.match(new RegExp(`^${field}\\b`))
      }
      await bad({}, 'cwd')
      await bad({ cwd: 42 }, 'cwd')
      await bad({ cwd: 'x', create: 'yes' }, 'create')
      await bad({ cwd: 'x', model: 7 }, 'model')
      await bad([], 'body')
      await bad('"cwd"', 'body')
      const broken = await http().post('/api/sessions', '{"cwd":')
      expect(broken.status).to.equal(400)
      expect(((await broken.json()) as any).code).to.equal('BAD_REQUEST')
      const unknown = await http().post('/api/sessions', { cwd: 'x', create: true, model: 'nope' })
      expect(unknown.status).to.equal(404)
      expect(((await unknown.json()) as any).code).to.equal('MODEL_NOT_FOUND')
    })
  })

  describe('input, queue and cancel', () => {
    it('queues chat as a turn: streamed model text is recorded whole, usage is summed', async () => {
      const id = await createSession(op.host, { cwd: 'chat', create: true, model: 'test-stream' })
      const deltas: string[] = []
      op.host.ctx.on('agent/text-delta', (agent, delta) => { if (agent.id === id) deltas.push(delta) })
      const response = await http().post(`/api/sessions/${id}/input`, { text: 'Say hello' })
      expect(response.status).to.equal(202)
      expect(await response.json()).to.include({ kind: 'queued', position: 0, running: false })
      await until(async () => (await events(id)).some((e) => e.type === 'model/usage'), 'the turn to finish')
      const log = await events(id)
      expect(log.map((e) => e.type)).to.deep.equal(['user/message', 'assistant/message', 'model/usage'])
      expect(log[1].data.text).to.equal('Hello')
      expect(deltas).to.deep.equal(['Hel', 'lo'])
      await http().post(`/api/sessions/${id}/input`, { text: 'Again' })
      await until(async () => (await events(id)).filter((e) => e.type === 'model/usage').length === 2, 'the second turn')
      const { body } = await http().json(`/api/sessions/${id}`)
      expect(body.usage).to.include({ steps: 2, promptTokens: 6, completionTokens: 4 })
      expect(body.usage.byRoute['test-stream']).to.deep.equal({ steps: 2, promptTokens: 6, completionTokens: 4, cachedTokens: 0 })
    })

    it('runs slash commands and answers with their reply (or the coded refusal)', async () => {
      const id = await createSession(op.host, { cwd: 'cmd', create: true })
      const created = await http().post(`/api/sessions/${id}/input`, { text: '/task new Write a greeting' })
      expect(created.status).to.equal(200)
      const body = await created.json() as any
      expect(body.kind).to.equal('command')
      expect(body.reply.reply).to.include({ phase: 'planning' })
      const unknown = await http().post(`/api/sessions/${id}/input`, { text: '/nope' })
      expect(unknown.status).to.equal(404)
      const refused = await unknown.json() as any
      expect(refused).to.include({ code: 'COMMAND_NOT_FOUND', kind: 'command' })
      expect(refused.reply.error.code).to.equal('COMMAND_NOT_FOUND')
      const again = await http().post(`/api/sessions/${id}/input`, { text: '/task approve' })
      expect(again.status).to.equal(409)
      const types = (await events(id)).map((e) => e.type)
      expect(types.filter((t) => t === 'command/reply')).to.have.length(3)
    })

    it('validates input bodies and event paging with coded 400s naming the field', async () => {
      const id = await createSession(op.host, { cwd: 'v', create: true })
      for (const [body, field] of [[{}, 'text'], [{ text: 5 }, 'text'], [{ text: '   ' }, 'text'], [{ text: 'x'.repeat(100_001) }, 'text']] as const) {
        const response = await http().post(`/api/sessions/${id}/input`, body)
        const json = await response.json() as any
        expect(response.status, JSON.stringify(json).slice(0, 200)).to.equal(400)
        expect(json.error).to.match(new RegExp(`^${field}:`))
      }
      for (const [query, field] of [['from=abc', 'from'], ['from=-1', 'from'], ['limit=5000', 'limit'], ['limit=1.5', 'limit']]) {
        const { status, body } = await http().json(`/api/sessions/${id}/events?${query}`)
        expect(status).to.equal(400)
        expect(body.error).to.match(new RegExp(`^${field}:`))
      }
      expect((await http().post('/api/sessions/nope/input', { text: 'hi' })).status).to.equal(404)
      expect((await events(id))).to.have.length(0)
    })

    it('holds input that arrives during a turn as the next turn: listed, removable, never interleaved', async () => {
      const id = await createSession(op.host, { cwd: 'q', create: true, model: 'test-hold' })
      expect((await http().post(`/api/sessions/${id}/input`, { text: 'first' })).status).to.equal(202)
      await until(() => op.holding.started.length === 1, 'the first turn to start')
      const second = await (await http().post(`/api/sessions/${id}/input`, { text: 'second' })).json() as any
      const third = await (await http().post(`/api/sessions/${id}/input`, { text: 'third' })).json() as any
      expect(second).to.include({ kind: 'queued', position: 0, running: true })
      expect(third).to.include({ position: 1 })
      const { body: queue } = await http().json(`/api/sessions/${id}/queue`)
      expect(queue.state).to.equal('running')
      expect(queue.items.map((item: any) => [item.text, item.origin])).to.deep.equal([['second', 'user'], ['third', 'user']])
      // Queued input is not in the log yet: it is recorded when its turn starts.
      expect((await events(id)).filter((e) => e.type === 'user/message').map((e) => e.data.text)).to.deep.equal(['first'])

      const removed = await http().fetch(`/api/sessions/${id}/queue/${second.id}`, { method: 'DELETE' })
      expect(removed.status).to.equal(200)
      expect(((await removed.json()) as any).removed.text).to.equal('second')
      const gone = await http().fetch(`/api/sessions/${id}/queue/${second.id}`, { method: 'DELETE' })
      expect(gone.status).to.equal(404)

      op.holding.release()
      await until(() => op.holding.started.length === 2, 'the queued turn to start')
      op.holding.release()
      await until(async () => (await events(id)).filter((e) => e.type === 'assistant/message').length === 2, 'both turns to finish')
      const texts = (await events(id)).filter((e) => e.type === 'user/message' || e.type === 'assistant/message').map((e) => e.data.text)
      expect(texts).to.deep.equal(['first', 'released: first', 'third', 'released: third'])
    })

    it('cancel stops the running turn (the model sees the abort) and drops the queue', async () => {
      const id = await createSession(op.host, { cwd: 'c', create: true, model: 'test-hold' })
      await http().post(`/api/sessions/${id}/input`, { text: 'long job' })
      await until(() => op.holding.started.length === 1, 'the turn to start')
      await http().post(`/api/sessions/${id}/input`, { text: 'queued one' })
      const response = await http().post(`/api/sessions/${id}/cancel`, {})
      expect(response.status).to.equal(200)
      const body = await response.json() as any
      expect(body.cancelled).to.equal(true)
      expect(body.dropped.map((item: any) => item.text)).to.deep.equal(['queued one'])
      expect(op.holding.aborts).to.deep.equal(['long job'])
      await until(() => op.host.ctx.agents.get(id)!.state === 'idle', 'the agent to go idle')
      expect((await http().json(`/api/sessions/${id}/queue`)).body.items).to.deep.equal([])
      const log = await events(id)
      expect(log.find((e) => e.type === 'agent/cancelled')?.data).to.deep.equal({ by: 'operator', running: true, dropped: 1 })
      expect(log.filter((e) => e.type === 'user/message').map((e) => e.data.text)).to.deep.equal(['long job'])
      expect(op.holding.started).to.deep.equal(['long job'])
      // Nothing to cancel: answered, nothing recorded.
      const idle = await (await http().post(`/api/sessions/${id}/cancel`, {})).json() as any
      expect(idle).to.deep.equal({ cancelled: false, dropped: [] })
      expect((await events(id)).filter((e) => e.type === 'agent/cancelled')).to.have.length(1)
    })
  })

  describe('GET /api/sessions/:id/events', () => {
    it('pages the transcript in seq order', async () => {
      const id = await createSession(op.host, { cwd: 'p', create: true })
      const session = await op.host.ctx.sessions.get(id)
      for (let i = 0; i < 7; i++) await session.append('test/note', { i })
      const first = (await http().json(`/api/sessions/${id}/events?limit=3`)).body
      expect(first.events.map((e: any) => e.seq)).to.deep.equal([0, 1, 2])
      expect(first).to.include({ next: 3, seq: 7 })
      const last = (await http().json(`/api/sessions/${id}/events?from=6&limit=3`)).body
      expect(last.events.map((e: any) => e.data.i)).to.deep.equal([6])
      expect(last.next).to.equal(undefined)
      expect((await http().json(`/api/sessions/${id}/events?from=99`)).body.events).to.deep.equal([])
    })

    it('ends a page early at about 8 MiB of events (always at least one), with `next` to go on', async () => {
      const id = await createSession(op.host, { cwd: 'big', create: true })
      const session = await op.host.ctx.sessions.get(id)
      const big = 'x'.repeat(1024 * 1024)
      for (let i = 0; i < 20; i++) await session.append('test/big', { i, big })
      const seen: number[] = []
      let from: number | undefined = 0
      let pages = 0
      while (from !== undefined) {
        const response = await http().fetch(`/api/sessions/${id}/events?from=${from}&limit=1000`)
        const text = await response.text()
        expect(text.length).to.be.lessThan(10 * 1024 * 1024)
        const body = JSON.parse(text)
        expect(body.events.length).to.be.greaterThan(0)
        seen.push(...body.events.map((e: any) => e.data.i))
        from = body.next
        pages++
      }
      expect(seen).to.deep.equal(Array.from({ length: 20 }, (_, i) => i))
      expect(pages).to.be.greaterThan(2)
    })
  })

  describe('after a restart', () => {
    it('resumes the agent on input, and a refused resume refuses chat with its code', async () => {
      const id = await createSession(op.host, { cwd: 'r', create: true, model: 'test-stream' })
      await op.host.restart()
      expect(op.host.ctx.agents.get(id)).to.equal(undefined)
      const response = await afterRestart(() => http().post(`/api/sessions/${id}/input`, { text: 'still there?' }))
      expect(response.status).to.equal(202)
      await until(async () => (await events(id)).some((e) => e.type === 'assistant/message'), 'the resumed turn')
      expect(op.host.ctx.agents.get(id)?.model).to.equal('test-stream')

      await op.host.restart()
      op.host.ctx.plugin({
        name: 'test-refuse-resume',
        apply: (ctx: Context) => ctx.on('agent/before-resume', () => new TaskwardError('READER_UNAVAILABLE', 'A record cannot be read.')),
      })
      const refused = await afterRestart(() => http().post(`/api/sessions/${id}/input`, { text: 'again' }))
      expect(refused.status).to.equal(503)
      expect(((await refused.json()) as any).code).to.equal('READER_UNAVAILABLE')
      expect(op.host.ctx.agents.get(id)).to.equal(undefined)
      expect((await events(id)).filter((e) => e.type === 'user/message')).to.have.length(1)
    })
  })
})

describe('operator routes: a workspace root that cannot be created', function () {
  this.timeout(30_000)

  it('answers POST /api/sessions with a coded refusal naming the root, not a 500', async () => {
    const { TestHost, tempWorkspace, removeTree } = await import('@taskward/testkit')
    const base = await tempWorkspace({ 'not-a-directory': 'x' }, 'taskward-operator-root-')
    const root = join(base, 'not-a-directory', 'workspaces')
    const host = await TestHost.boot({ host: { operator: { workspaceRoots: [root] } }, waitFor: ['operator'] })
    try {
      const response = await host.http.post('/api/sessions', { cwd: 'project', create: true })
      const json = await response.json() as any
      expect(response.status, JSON.stringify(json)).to.not.equal(500)
      expect(json.code).to.equal('CONFIG_INVALID')
      expect(json.error).to.include(root)
      expect(await host.ctx.sessions.list()).to.have.length(0)
    } finally {
      await host.dispose()
      await removeTree(base)
    }
  })
})

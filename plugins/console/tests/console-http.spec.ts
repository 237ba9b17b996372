import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import { WebConsole } from '../src'
import { bootSupervisor, completedTask, PLAN, workspace } from '../../supervisor/tests/fixtures'

/** The console's routes through the real server: auth, pages, assets, JSON views and live updates. */
describe('console over HTTP', function () {
  this.timeout(20_000)
  let host: TestHost
  let cwd: string
  let session: Session

  beforeEach(async () => {
    host = await bootSupervisor({ automaticContinuation: false }, [[WebConsole, { demo: false, heartbeatSeconds: 1 }]])
    cwd = await workspace()
    session = await host.ctx.sessions.create({ cwd })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  const hooks = (name: string) => ((host.ctx as any).lifecycle._hooks[name] ?? []).length
  /** The live stream follows the log as an observer of the sessions service (a direct call per append). */
  const observers = () => host.ctx.sessions.observerCount()

  it('answers 401 without a token and 403 with a session token on every page, asset and API', async () => {
    const paths = ['/', `/sessions/${session.id}`, '/assets/console.js', '/api/console/sessions',
      `/api/console/sessions/${session.id}/view`, `/api/console/sessions/${session.id}/events`]
    const sessionToken = host.ctx.connection.issueSessionToken(session.id)
    for (const path of paths) {
      const anonymous = await host.http.fetch(path, { token: null })
      expect(anonymous.status, path).to.equal(401)
      expect(((await anonymous.json()) as { code: string }).code).to.equal('UNAUTHORIZED')
      const scoped = await host.http.fetch(`${path}${path.includes('?') ? '&' : '?'}sessionId=${session.id}`, { token: sessionToken })
      expect(scoped.status, path).to.equal(403)
      await scoped.body?.cancel()
    }
  })

  it('serves the page shells with a strict CSP, and only the shipped assets', async () => {
    const page = await host.http.fetch(`/sessions/${session.id}`)
    expect(page.status).to.equal(200)
    expect(page.headers.get('content-security-policy')).to.include("script-src 'self'")
    const html = await page.text()
    expect(html).to.include(`data-session-id="${session.id}"`).and.include('/assets/console.js')
    // Lighthouse's SEO audit wants a description on every page (tests/console-lighthouse.spec.ts).
    expect(html).to.match(/<meta name="description" content="[^"]{20,}">/)
    expect(await (await host.http.fetch('/')).text()).to.match(/<meta name="description" content="[^"]{20,}">/)
    for (const asset of ['console.js', 'console.css', 'dag.js', 'impact.js', 'task.js', 'dom.js']) {
      expect((await host.http.fetch(`/assets/${asset}`)).status, asset).to.equal(200)
    }
    expect((await host.http.fetch('/assets/nope.js')).status).to.equal(404)
    expect((await host.http.fetch('/assets/..%2F..%2Fpackage.json')).status).to.equal(404)
    expect((await host.http.fetch('/sessions/no-such-session')).status).to.equal(404)
  })

  it('returns the task view: phase, effective cycle, DAG layout, node runs and reviews with their sessions', async () => {
    const empty = await host.http.json(`/api/console/sessions/${session.id}/view`)
    expect(empty.body).to.not.have.property('current')
    await completedTask(host, session, 'parse nested lists', PLAN)
    const { status, body } = await host.http.json(`/api/console/sessions/${session.id}/view`)
    expect(status).to.equal(200)
    expect(body.current).to.include({ phase: 'complete', acceptanceCycle: 1, cycleRecorded: false, isCurrent: true })
    expect(body.current.layout.nodes.map((n: any) => [n.id, n.layer])).to.deep.equal([['a', 0], ['b', 1], ['c', 1], ['d', 2]])
    expect(body.current.nodes.map((n: any) => `${n.id}:${n.status}:${n.attempt}`)).to.deep.equal(['a:passed:1', 'b:passed:1', 'c:passed:1', 'd:passed:1'])
    expect(body.current.reviews.map((r: any) => r.kind)).to.deep.equal(['plan', 'stage', 'stage', 'stage', 'stage', 'completion'])
    const reviewers = (await host.ctx.sessions.list({ parentId: session.id })).map((s) => s.id)
    for (const review of body.current.reviews) expect(reviewers).to.include(review.reviewerSessionId)
    expect(body.proposals).to.deep.equal([])
    expect(body.advice.ARTIFACT_CHANGED).to.match(/propose again/)
    const list = await host.http.json('/api/console/sessions')
    expect(list.body.sessions.map((s: any) => [s.id, s.task?.phase])).to.deep.equal([[session.id, 'complete']])
  })

  /** Read an SSE body until `pattern` shows up. */
  async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, pattern: RegExp, seen = { text: '' }) {
    const decoder = new TextDecoder()
    while (!pattern.test(seen.text)) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`stream ended before ${pattern}: ${seen.text}`)
      seen.text += decoder.decode(value)
    }
    return seen.text
  }

  it('streams "changed" when the session log grows, and removes its listeners when the client goes away', async () => {
    const baseline = { event: observers(), changed: hooks('supervisor/changed') }
    const abort = new AbortController()
    const response = await host.http.fetch(`/api/console/sessions/${session.id}/events`, { signal: abort.signal })
    expect(response.headers.get('content-type')).to.match(/^text\/event-stream/)
    const reader = response.body!.getReader()
    await readUntil(reader, /event: ready/)
    expect(host.ctx.webConsole.live.size).to.equal(1)
    expect(observers()).to.equal(baseline.event + 1)
    await session.append('user/message', { text: 'hello' })
    const text = await readUntil(reader, /event: changed\ndata: .*\n\n/)
    expect(text).to.include(`"sessionId":"${session.id}"`)
    // Keep-alive comments flow while nothing happens (heartbeat 1 s in this suite).
    await readUntil(reader, /: keep-alive/, { text: '' })
    abort.abort()
    const started = Date.now()
    while (host.ctx.webConsole.live.size && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(host.ctx.webConsole.live.size).to.equal(0)
    expect(observers()).to.equal(baseline.event)
    expect(hooks('supervisor/changed')).to.equal(baseline.changed)
  })

  it('streams each appended event, streamed text deltas and the agent\'s queue, and removes those listeners too', async () => {
    const baseline = { delta: hooks('agent/text-delta'), queue: hooks('agent/queue'), state: hooks('agent/state') }
    const agent = await host.ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' })
    const abort = new AbortController()
    const response = await host.http.fetch(`/api/console/sessions/${session.id}/events`, { signal: abort.signal })
    const reader = response.body!.getReader()
    const seen = { text: '' }
    await readUntil(reader, /event: ready/, seen)
    const big = await session.append('test/big', { text: 'x'.repeat(70 * 1024) })
    await readUntil(reader, /event: event\ndata: .*"truncated":true.*\n\n/, seen)
    expect(seen.text).to.include(`{"seq":${big.seq},"type":"test/big","truncated":true}`)
    await session.append('user/message', { text: 'hello <b>' })
    await readUntil(reader, /event: event\ndata: .*hello <b>.*\n\n/, seen)
    host.ctx.emit('agent/text-delta', agent, 'Hel')
    await readUntil(reader, /event: delta\ndata: \{"delta":"Hel"\}\n\n/, seen)
    host.ctx.models.scripted.script('main', [async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return {} }])
    agent.followup('work')
    await readUntil(reader, /event: queue\ndata: \{"state":"idle","held":false,"items":\[\{"id":"[\w-]+","text":"work","origin":"user"/, seen)
    await readUntil(reader, /event: queue\ndata: \{"state":"running"/, seen)
    await agent.whenIdle()
    abort.abort()
    const started = Date.now()
    while (host.ctx.webConsole.live.size && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20))
    expect({ delta: hooks('agent/text-delta'), queue: hooks('agent/queue'), state: hooks('agent/state') }).to.deep.equal(baseline)
  })

  it('streams a model step\'s events once they are durable, not while the step has them staged', async () => {
    let entered!: () => void
    const inTool = new Promise<void>((resolve) => entered = resolve)
    let release!: () => void
    const released = new Promise<void>((resolve) => release = resolve)
    host.ctx.tools.register({
      name: 'hold',
      description: 'Append a record, then wait until the test lets go.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        await session.append('test/staged-record', {})
        entered()
        await released
        return { ok: true }
      },
    })
    const agent = await host.ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' })
    const abort = new AbortController()
    const response = await host.http.fetch(`/api/console/sessions/${session.id}/events`, { signal: abort.signal })
    const reader = response.body!.getReader()
    const seen = { text: '' }
    await readUntil(reader, /event: ready/, seen)
    host.ctx.models.scripted.script('main', [{ toolCalls: [{ name: 'hold' }] }, {}])
    agent.followup('work')
    await inTool
    // Whatever the stream had sent by now comes before this delta.
    host.ctx.emit('agent/text-delta', agent, 'marker')
    await readUntil(reader, /event: delta\ndata: \{"delta":"marker"\}/, seen)
    const stored = (await host.ctx.database.get('taskward_event', { sessionId: session.id })).map((row) => row.type)
    expect(stored, 'the step is still staged').to.not.include('test/staged-record')
    expect(seen.text).to.not.include('test/staged-record')
    expect(seen.text).to.not.include('"type":"tool/call"')
    release()
    await readUntil(reader, /"type":"test\/staged-record"/, seen)
    await agent.whenIdle()
    await readUntil(reader, /"type":"tool\/result"/, seen)
    // In seq order, each once.
    const seqs = [...seen.text.matchAll(/event: event\ndata: \{"seq":(\d+)/g)].map((match) => Number(match[1]))
    expect(seqs).to.deep.equal([...seqs].sort((a, b) => a - b))
    expect(new Set(seqs).size).to.equal(seqs.length)
    abort.abort()
  })

  it('sends assets compressed (br, gzip or plain as accepted) with a weak ETag, and 304 for a matching If-None-Match', async () => {
    const plain = await host.http.fetch('/assets/console.css', { headers: { 'accept-encoding': 'identity' } })
    const css = await plain.text()
    expect(plain.headers.get('content-encoding')).to.equal(null)
    expect(css).to.include('prefers-color-scheme: dark')
    const etag = plain.headers.get('etag')!
    expect(etag).to.match(/^W\/"[\w-]{22}"$/)
    expect(plain.headers.get('vary')).to.equal('accept-encoding')
    // Node's fetch decodes what it asked for: the body is the same text, the header says how it came.
    const gzip = await host.http.fetch('/assets/console.css', { headers: { 'accept-encoding': 'gzip' } })
    expect(gzip.headers.get('content-encoding')).to.equal('gzip')
    expect(await gzip.text()).to.equal(css)
    const refusedBr = await host.http.fetch('/assets/console.css', { headers: { 'accept-encoding': 'br;q=0, gzip' } })
    expect(refusedBr.headers.get('content-encoding')).to.equal('gzip')
    await refusedBr.body?.cancel()
    for (const tag of [etag, etag.slice(2), `"other", ${etag}`]) {
      const revisit = await host.http.fetch('/assets/console.css', { headers: { 'if-none-match': tag } })
      expect(revisit.status, tag).to.equal(304)
      expect(await revisit.text()).to.equal('')
    }
    const changed = await host.http.fetch('/assets/console.css', { headers: { 'if-none-match': '"stale"' } })
    expect(changed.status).to.equal(200)
    await changed.body?.cancel()
  })

  it('gives a session token the live stream of its own session only: its events and deltas, never another session\'s', async () => {
    const other = await host.ctx.sessions.create({ cwd })
    const token = host.ctx.connection.issueSessionToken(session.id)
    expect((await host.http.fetch(`/api/sessions/${other.id}/stream`, { token })).status).to.equal(403)
    const abort = new AbortController()
    const response = await host.http.fetch(`/api/sessions/${session.id}/stream`, { token, signal: abort.signal })
    expect(response.status).to.equal(200)
    expect(response.headers.get('content-type')).to.match(/^text\/event-stream/)
    const reader = response.body!.getReader()
    const seen = { text: '' }
    await readUntil(reader, /event: ready/, seen)
    host.ctx.emit('agent/text-delta', { id: other.id } as any, 'delta-of-the-other-session')
    await other.append('user/message', { text: 'event-of-the-other-session' })
    host.ctx.emit('agent/text-delta', { id: session.id } as any, 'my-own-delta')
    await session.append('user/message', { text: 'my-own-event' })
    await readUntil(reader, /my-own-event/, seen)
    expect(seen.text).to.include('my-own-delta')
    expect(seen.text).to.not.include('of-the-other-session')
    abort.abort()
  })

  it('closes open streams when the console plugin is disposed', async () => {
    const baseline = observers()
    const response = await host.http.fetch(`/api/console/sessions/${session.id}/events`)
    const reader = response.body!.getReader()
    await readUntil(reader, /event: ready/)
    const live = host.ctx.webConsole.live
    expect(live.size).to.equal(1)
    ;(host.ctx as any).registry.get(WebConsole).dispose()
    let done = false
    while (!done) done = (await reader.read()).done
    expect(live.size).to.equal(0)
    expect(observers()).to.equal(baseline)
    expect((await host.http.fetch(`/api/console/sessions/${session.id}/view`)).status).to.equal(404)
  })

  it('ends the stream of a client that stopped reading instead of queueing events without bound', async () => {
    const { request } = await import('node:http')
    const url = new URL(`/api/console/sessions/${session.id}/events`, host.ctx.connection.baseUrl)
    const live = host.ctx.webConsole.live
    // A client that reads the headers, then nothing more (a stalled network, a frozen tab).
    const response = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = request(url, { headers: { authorization: `Bearer ${host.ctx.connection.tokens.operatorToken}` } }, resolve)
      req.on('error', reject)
      req.end()
    })
    response.pause()
    try {
      expect(live.size).to.equal(1)
      const big = 'x'.repeat(50_000)
      // ~40 MB of events: far more than the sockets buffer.
      for (let i = 0; i < 800 && live.size; i++) await session.append('test/bulk', { i, big })
      expect(live.size, 'the stalled stream is still open').to.equal(0)
    } finally {
      response.destroy()
    }
  })
})

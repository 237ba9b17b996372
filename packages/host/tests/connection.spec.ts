import { expect } from 'chai'
import type { Context } from 'cordis'
import { TokenStore, type RouteContext } from '@taskward/host'
import { TestHost } from '@taskward/testkit'

/** A test plugin with a session-scoped echo route and an operator-only route. */
const echoPlugin = {
  name: 'test-echo-routes',
  inject: ['connection'],
  apply(ctx: Context) {
    ctx.connection.register({
      path: '/api/sessions/:sessionId/echo',
      methods: ['GET', 'POST'],
      async handler(request: Request, { sessionId, grant, params }: RouteContext) {
        const body = request.method === 'POST' ? await request.json() : undefined
        return Response.json({ method: request.method, sessionId, param: params.sessionId, grant: grant.kind, body })
      },
    })
    ctx.connection.register({
      path: '/api/operator/ping',
      methods: ['GET'],
      access: 'operator',
      handler: () => Response.json({ pong: true }),
    })
  },
}

const ECHO = '/api/sessions/s1/echo'

describe('host: connection', () => {
  let host: TestHost
  let owner: ReturnType<Context['plugin']>
  beforeEach(async () => {
    host = await TestHost.boot()
    owner = host.ctx.plugin(echoPlugin)
  })
  afterEach(async () => { await host.dispose() })

  describe('tokens', () => {
    it('answers 401 JSON {error, code: UNAUTHORIZED} without a token', async () => {
      const response = await host.http.fetch(ECHO, { token: null })
      expect(response.status).to.equal(401)
      expect(response.headers.get('content-type')).to.match(/^application\/json/)
      const body = await response.json() as any
      expect(body.code).to.equal('UNAUTHORIZED')
      expect(body.error).to.be.a('string').and.not.empty
    })

    it('answers 401 for a wrong token, in the header or the cookie', async () => {
      expect((await host.http.json(ECHO, { token: 'not-the-token' })).body.code).to.equal('UNAUTHORIZED')
      const viaCookie = await host.http.fetch(ECHO, { token: null, headers: { cookie: 'taskward_token=nope' } })
      expect(viaCookie.status).to.equal(401)
    })

    it('lets the operator token open any session', async () => {
      const { status, body } = await host.http.json(ECHO)
      expect(status).to.equal(200)
      expect(body).to.deep.equal({ method: 'GET', sessionId: 's1', param: 's1', grant: 'operator' })
    })

    it('lets a session token open its own session and answers 403 for another one', async () => {
      const token = host.ctx.connection.issueSessionToken('s1')
      const own = await host.http.json(ECHO, { token })
      expect(own.status).to.equal(200)
      expect(own.body).to.deep.include({ sessionId: 's1', grant: 'session' })
      const other = await host.http.json('/api/sessions/s2/echo', { token })
      expect(other.status).to.equal(403)
      expect(other.body.code).to.equal('FORBIDDEN')
      const operatorOnly = await host.http.json('/api/operator/ping', { token })
      expect(operatorOnly.status).to.equal(403)
      expect((await host.http.json('/api/operator/ping')).body).to.deep.equal({ pong: true })
    })

    it('never accepts a token that was not issued by this host after a restart', async () => {
      const token = host.ctx.connection.issueSessionToken('s1')
      const operator = host.operatorToken
      await host.restart()
      host.ctx.plugin(echoPlugin)
      expect((await host.http.fetch(ECHO, { token })).status).to.equal(401)
      expect((await host.http.fetch(ECHO, { token: operator })).status).to.equal(401)
      expect((await host.http.fetch(ECHO)).status).to.equal(200)
    })
  })

  describe('bodies and origins', () => {
    it('hands a JSON body to the handler and answers 400 BAD_REQUEST for a malformed one', async () => {
      const ok = await host.http.post(ECHO, { hello: 'world' })
      expect(ok.status).to.equal(200)
      expect((await ok.json() as any).body).to.deep.equal({ hello: 'world' })
      const bad = await host.http.post(ECHO, '{"hello": ')
      expect(bad.status).to.equal(400)
      expect((await bad.json() as any).code).to.equal('BAD_REQUEST')
    })

    it('answers 403 to a mutating request from a foreign Origin, before the handler runs', async () => {
      const response = await host.http.post(ECHO, '{"hello": ', { origin: 'https://evil.example' })
      expect(response.status).to.equal(403)
      expect((await response.json() as any).code).to.equal('FORBIDDEN')
    })

    it('lets a same-origin mutating request and a GET from any origin reach the handler', async () => {
      expect((await host.http.post(ECHO, { n: 1 }, { origin: host.url })).status).to.equal(200)
      expect((await host.http.fetch(ECHO, { origin: 'https://elsewhere.example' })).status).to.equal(200)
    })

    it('accepts an Origin listed in connection.allowedOrigins', async () => {
      await host.dispose()
      host = await TestHost.boot({ host: { connection: { allowedOrigins: ['https://console.example'] } } })
      host.ctx.plugin(echoPlugin)
      expect((await host.http.post(ECHO, {}, { origin: 'https://console.example' })).status).to.equal(200)
      expect((await host.http.post(ECHO, {}, { origin: 'https://other.example' })).status).to.equal(403)
    })

    it('answers 403 to a cookie-authenticated POST without Origin; a Bearer client needs none', async () => {
      const cookie = `taskward_token=${encodeURIComponent(host.operatorToken)}`
      const noOrigin = await host.http.post(ECHO, {}, { token: null, origin: null, headers: { cookie } })
      expect(noOrigin.status).to.equal(403)
      expect((await noOrigin.json() as any).code).to.equal('FORBIDDEN')
      expect((await host.http.post(ECHO, {}, { token: null, headers: { cookie } })).status).to.equal(200)
      expect((await host.http.post(ECHO, {}, { origin: null })).status).to.equal(200)
    })
  })

  describe('built-in routes', () => {
    it('logs a browser in: /login sets an HttpOnly SameSite=Strict cookie and redirects', async () => {
      const response = await host.http.fetch(`/login?token=${encodeURIComponent(host.operatorToken)}&next=/console`, { token: null })
      expect(response.status).to.be.within(300, 399)
      expect(response.headers.get('location')).to.equal('/console')
      const setCookie = response.headers.getSetCookie()
      expect(setCookie).to.have.length(1)
      expect(setCookie[0]).to.match(/^taskward_token=/)
      expect(setCookie[0]).to.match(/;\s*HttpOnly/i)
      expect(setCookie[0]).to.match(/;\s*SameSite=Strict/i)
      const cookie = setCookie[0].split(';')[0]
      expect((await host.http.fetch(ECHO, { token: null, headers: { cookie } })).status).to.equal(200)
    })

    it('refuses a login link with a wrong token and never redirects off-site', async () => {
      expect((await host.http.fetch('/login?token=wrong', { token: null })).status).to.equal(401)
      const response = await host.http.fetch(`/login?token=${encodeURIComponent(host.operatorToken)}&next=//evil.example/`, { token: null })
      expect(response.headers.get('location')).to.equal('/')
    })

    it('redirects after login only to a path on this host, however the target is spelt', async () => {
      const login = (next: string) => host.http.fetch(`/login?token=${encodeURIComponent(host.operatorToken)}&next=${next}`, { token: null })
      // Each of these is read by a browser as another host (or another scheme).
      const offSite = [
        '/\\evil.example', '/%5Cevil.example', '%5C%5Cevil.example', '/%09/evil.example', '/%0A/evil.example', '/%0D/evil.example',
        '//evil.example', '///evil.example', '/.//evil.example', '/%2F/evil.example', 'https://evil.example', 'https:evil.example',
        'javascript:alert(1)', '%20//evil.example', '/%00/evil.example', 'evil.example',
      ]
      for (const next of offSite) {
        const response = await login(next)
        expect(response.status, next).to.equal(303)
        expect(response.headers.get('location'), next).to.equal('/')
      }
      // Paths on this host keep their query and fragment.
      expect((await login(encodeURIComponent('/sessions/s1?tab=dag#node-a'))).headers.get('location')).to.equal('/sessions/s1?tab=dag#node-a')
      expect((await login('/')).headers.get('location')).to.equal('/')
      expect((await login('')).headers.get('location')).to.equal('/')
    })

    it('sends nosniff and a same-origin Referrer-Policy on every response (routes, errors, redirects, 404s)', async () => {
      const responses = [
        await host.http.fetch('/health', { token: null }),
        await host.http.fetch(ECHO),
        await host.http.fetch(ECHO, { token: null }),
        await host.http.post(ECHO, {}, { origin: 'http://evil.example' }),
        await host.http.post(ECHO, '{not json'),
        await host.http.fetch('/no/such/route'),
        await host.http.fetch(`/login?token=${encodeURIComponent(host.operatorToken)}`, { token: null }),
      ]
      for (const response of responses) {
        expect(response.headers.get('x-content-type-options'), response.url).to.equal('nosniff')
        expect(response.headers.get('referrer-policy'), response.url).to.equal('same-origin')
      }
    })

    it('answers an unknown path with JSON {error, code: NOT_FOUND}', async () => {
      const response = await host.http.fetch('/no/such/route')
      expect(response.status).to.equal(404)
      expect(await response.json()).to.deep.include({ code: 'NOT_FOUND' })
    })

    it('refuses a configured operator token weaker than 128 bits', () => {
      expect(() => new TokenStore('short')).to.throw().with.property('code', 'CONFIG_INVALID')
      expect(new TokenStore('a'.repeat(22)).verify('a'.repeat(22))).to.deep.equal({ kind: 'operator' })
    })

    it('answers /health without a token', async () => {
      const response = await host.http.fetch('/health', { token: null, origin: null })
      expect(response.status).to.equal(200)
      expect(await response.json()).to.deep.equal({ ok: true, ready: true })
    })
  })

  it('removes a route when the plugin that registered it is disposed', async () => {
    expect((await host.http.fetch(ECHO)).status).to.equal(200)
    owner.dispose()
    expect((await host.http.fetch(ECHO)).status).to.equal(404)
    expect((await host.http.post(ECHO, {})).status).to.equal(404)
    expect((await host.http.fetch('/health')).status).to.equal(200)
  })
})

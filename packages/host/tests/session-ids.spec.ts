import { expect } from 'chai'
import { TestHost } from '@taskward/testkit'
import { tmpdir } from 'node:os'

const UNSTORABLE = ['', '.', '..', 'a\u0000b', 'line\nbreak', 'tab\there', 'del\u007f', 'x'.repeat(129), 'half\uD800']

describe('host: ids the store cannot hold', () => {
  let host: TestHost
  before(async () => { host = await TestHost.boot() })
  after(async () => { await host.dispose() })

  for (const id of UNSTORABLE) {
    it(`refuses ${JSON.stringify(id.slice(0, 20))} in create, get and has with BAD_REQUEST before any query`, async () => {
      const driver: any = (host.ctx.database as any)._driver
      const queries: string[] = []
      const spy = (sql: string) => queries.push(sql)
      const exec = driver._exec
      driver._exec = function (sql: string, ...rest: any[]) { spy(sql); return exec.call(this, sql, ...rest) }
      try {
        for (const attempt of <(() => Promise<unknown>)[]>[() => host.ctx.sessions.create({ id, cwd: tmpdir() }), () => host.ctx.sessions.get(id), () => host.ctx.sessions.has(id)]) {
          const error = await Promise.resolve().then(attempt).then(() => undefined, (error) => error)
          expect(error?.code).to.equal('BAD_REQUEST')
          expect(error.message).to.include('cannot be stored')
        }
      } finally {
        driver._exec = exec
      }
      expect(queries).to.deep.equal([])
      expect((await host.ctx.sessions.list()).map((s) => s.id)).to.not.include(id)
    })
  }

  it('still takes ordinary ids', async () => {
    const session = await host.ctx.sessions.create({ id: 'main.v2_x-1', cwd: tmpdir() })
    expect((await host.ctx.sessions.get('main.v2_x-1')).id).to.equal(session.id)
  })

  it('refuses such ids arriving over HTTP (path or query) with 400 BAD_REQUEST', async () => {
    let called = 0
    host.ctx.plugin({
      name: 'test-route', inject: ['connection'],
      apply: (ctx) => ctx.connection.register({ path: '/api/test-ids/:sessionId', methods: ['GET'], handler: () => { called++; return Response.json({ ok: true }) } }),
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const get = (path: string) => fetch(host.url + path, { headers: { authorization: `Bearer ${host.operatorToken}` } })
    expect((await get('/api/test-ids/fine')).status).to.equal(200)
    for (const path of ['/api/test-ids/a%00b', '/api/test-ids/a%0Ab', '/api/test-ids/x?sessionId=..']) {
      const response = await get(path)
      expect(response.status, path).to.equal(400)
      expect(await response.json()).to.include({ code: 'BAD_REQUEST' })
    }
    expect(called).to.equal(1)
  })
})

import { expect } from 'chai'
import { admitRouteRequest, TaskwardError, type RouteRequest } from '../src'

/* The route access decision both hosts' connections make (packages/host connection, adapters/dsh connection). */
describe('admitRouteRequest: who may call a Taskward route', () => {
  const own = 'http://127.0.0.1:7860'
  const base: RouteRequest = {
    method: 'GET', access: 'session', grant: { kind: 'operator' }, viaCookie: false, origin: undefined,
    allowedOrigins: [own], sessionId: 's1', loginHint: 'open the login link',
  }
  const refusal = (request: Partial<RouteRequest>) => {
    try {
      admitRouteRequest({ ...base, ...request })
    } catch (error) {
      expect(TaskwardError.is(error)).to.equal(true)
      return { code: (error as TaskwardError).code, message: (error as Error).message }
    }
    expect.fail('admitted')
  }

  it('admits a public route without any token, as operator', () => {
    expect(admitRouteRequest({ ...base, access: 'public', grant: undefined, method: 'POST', origin: 'http://evil.test' })).to.deep.equal({ kind: 'operator' })
  })

  it('refuses a missing or invalid token UNAUTHORIZED, naming where to log in', () => {
    const refused = refusal({ grant: undefined })
    expect(refused.code).to.equal('UNAUTHORIZED')
    expect(refused.message).to.include('open the login link')
  })

  it('holds changes to the Origin rule: a foreign Origin, and a cookie change without any Origin, are FORBIDDEN', () => {
    expect(refusal({ method: 'POST', origin: 'http://evil.test' }).code).to.equal('FORBIDDEN')
    expect(refusal({ method: 'post', origin: 'http://evil.test', originHint: 'add it to connection.allowedOrigins' }).message).to.include('connection.allowedOrigins')
    expect(refusal({ method: 'DELETE', viaCookie: true }).code).to.equal('FORBIDDEN')
    // A Bearer change without Origin (a script, curl) and a same-origin cookie change pass; reads need no Origin.
    expect(admitRouteRequest({ ...base, method: 'POST' })).to.deep.equal({ kind: 'operator' })
    expect(admitRouteRequest({ ...base, method: 'POST', viaCookie: true, origin: own })).to.deep.equal({ kind: 'operator' })
    expect(admitRouteRequest({ ...base, viaCookie: true, origin: 'http://evil.test' })).to.deep.equal({ kind: 'operator' })
    // An empty Origin header is no Origin.
    expect(refusal({ method: 'PATCH', viaCookie: true, origin: '' }).code).to.equal('FORBIDDEN')
  })

  it('lets a session token open only its own session, never an operator route', () => {
    const grant = { kind: 'session' as const, sessionId: 's1' }
    expect(admitRouteRequest({ ...base, grant })).to.deep.equal(grant)
    expect(refusal({ grant, sessionId: 's2' }).code).to.equal('FORBIDDEN')
    expect(refusal({ grant, sessionId: undefined }).code).to.equal('FORBIDDEN')
    expect(refusal({ grant, access: 'operator' }).code).to.equal('FORBIDDEN')
  })
})

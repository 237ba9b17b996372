import { TaskwardError } from '../errors'

/*
 * Who may call a Taskward route, decided the same way on every host (our kernel's connection and the
 * DSH adapter's): a pure decision over what the request presented. The hosts read the token (Bearer
 * header or the login cookie) and verify it against their token store; this decides what that grant,
 * the method, the Origin and the session the route is about allow.
 */

/** What a verified token opens: every session (operator) or one. */
export type TokenGrant = { kind: 'operator' } | { kind: 'session', sessionId: string }

export type RouteAccess = 'session' | 'operator' | 'public'

/** Methods that change something: only these are held to the Origin rule. */
export const MUTATING_METHODS: readonly string[] = ['POST', 'PUT', 'PATCH', 'DELETE']

export interface RouteRequest {
  method: string
  access: RouteAccess
  /** The grant the presented token verified to; undefined when none was presented or it is not valid. */
  grant: TokenGrant | undefined
  /** True when the token came from the login cookie (a browser sends it by itself), not a Bearer header. */
  viaCookie: boolean
  /** The request's Origin header, if any. */
  origin: string | undefined
  /** Origins that may send changes: the server's own, plus any configured. */
  allowedOrigins: readonly string[]
  /** The session the route is about (`:sessionId` or `?sessionId=`). */
  sessionId: string | undefined
  /** What to tell a caller without a valid token (where this host's login link is). */
  loginHint: string
  /** What to tell a refused Origin, if this host can allow more (e.g. its config key). */
  originHint?: string
}

/**
 * The grant a request runs with, or a coded refusal: `UNAUTHORIZED` without a valid token; `FORBIDDEN`
 * for a change from a foreign Origin, a cookie change without any Origin, a session token on an
 * operator route or on another session's route. A public route runs as operator and checks nothing.
 */
export function admitRouteRequest(request: RouteRequest): TokenGrant {
  if (request.access === 'public') return { kind: 'operator' }
  const grant = request.grant
  if (!grant) throw new TaskwardError('UNAUTHORIZED', `Missing or invalid token: ${request.loginHint}, or send "Authorization: Bearer <token>".`)
  if (MUTATING_METHODS.includes(request.method.toUpperCase())) {
    const origin = request.origin || undefined
    if (origin === undefined) {
      if (request.viaCookie) throw new TaskwardError('FORBIDDEN', 'A browser request that changes something must carry an Origin header.')
    } else if (!request.allowedOrigins.includes(origin)) {
      throw new TaskwardError('FORBIDDEN', `Origin ${origin} may not change anything here${request.originHint ? `; ${request.originHint}` : ''}.`)
    }
  }
  if (grant.kind === 'session') {
    if (request.access === 'operator') throw new TaskwardError('FORBIDDEN', 'This endpoint needs the operator token; a session token opens only its own session.')
    if (!request.sessionId || request.sessionId !== grant.sessionId) throw new TaskwardError('FORBIDDEN', 'This token belongs to another session.')
  }
  return grant
}

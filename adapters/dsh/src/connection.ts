import type { Context } from 'cordis'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { match, type MatchFunction } from 'path-to-regexp'
import { onDispose } from '@taskward/cordis-compat'
import { sameOriginTarget, TokenStore } from '@taskward/host'
import { TaskwardError, admitRouteRequest, asTaskwardError, errorBody, httpStatusOf, MUTATING_METHODS, type TokenGrant } from '@taskward/protocol'
import type { DshWebServer } from './dsh-types'
import { LoginTickets } from './login-links'
import { admitPanelGrant, GRANT_PATH, isTrustedHost } from './panel-access'

export const TOKEN_COOKIE = 'taskward_token'
const MAX_BODY = 1 << 20
const MUTATING = new Set(MUTATING_METHODS)
const SECURITY_HEADERS: Record<string, string> = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin' }

export interface RouteContext {
  params: Record<string, string>
  url: URL
  grant: TokenGrant
  sessionId?: string
}

export interface ConnectionRoute {
  /** A path under the prefix with `:name` parameters, e.g. `/api/sessions/:sessionId/repair`. */
  path: string
  methods: string[]
  access?: 'session' | 'operator' | 'public'
  handler(request: Request, context: RouteContext): Response | Promise<Response>
}

interface Registered extends ConnectionRoute { match: MatchFunction<Record<string, string>> }

/**
 * Taskward's `connection` (docs/host.md) on DSH's web server. DSH rc.8 authenticates no plugin route,
 * so every Taskward route is served under ONE prefix route (`/taskward`, no trailing slash: rc.8 never
 * matches a prefix path that has one) and authenticates itself exactly as on our host: the operator
 * token or a session token (Bearer or the HttpOnly SameSite=Strict cookie set by `<prefix>/login`),
 * the Origin rule for mutating requests, JSON bodies ≤ 1 MiB, errors `{error, code, details?}`.
 */
export class DshConnectionContract {
  private readonly routes: Registered[] = []
  readonly tokens: TokenStore
  private readonly tickets = new LoginTickets()
  protected ctx: Context

  constructor(
    ctx: Context, private readonly web: DshWebServer, readonly prefix: string, operatorToken: string | undefined, private readonly port: () => number | undefined,
    private readonly trustedHosts: readonly string[] = [],
  ) {
    this.ctx = ctx
    this.tokens = new TokenStore(operatorToken || undefined)
  }

  /** The login link a person opens once (printed by `npm run dsh`, answered by `/task console`). */
  get loginUrl() {
    return `${this.origin}${this.prefix}/login?token=${this.tokens.operatorToken}&next=${encodeURIComponent(this.prefix + '/')}`
  }

  get origin() {
    return `http://127.0.0.1:${this.port() ?? 0}`
  }

  /**
   * A link that logs a browser in ONCE (a one-time ticket, not the operator token) and then sends it
   * to `next` on this server; `/task console` answers it. The cookie it sets is the same as the
   * operator login's.
   */
  issueLoginLink(next: string, ttlMs: number) {
    const target = sameOriginTarget(next, this.origin)
    return `${this.origin}${this.prefix}/login?ticket=${this.tickets.issue(target, ttlMs)}`
  }

  issueSessionToken(sessionId: string) {
    return this.tokens.issueSessionToken(sessionId)
  }

  register(route: ConnectionRoute) {
    // path-to-regexp: the matcher koa-router uses on our host, so paths mean the same on both.
    const registered: Registered = { ...route, match: match<Record<string, string>>(this.prefix + route.path, { decode: decodeURIComponent }) }
    const routes = this.routes
    routes.push(registered)
    return onDispose(this.ctx, () => {
      const index = routes.indexOf(registered)
      if (index >= 0) routes.splice(index, 1)
    })
  }

  /** Mount the prefix on DSH's web server (done once by the adapter). */
  mount() {
    return this.web.register({ kind: 'prefix', path: this.prefix, handler: (req, res) => this.serve(req, res) })
  }

  private async serve(req: IncomingMessage, res: ServerResponse) {
    let response: Response
    try {
      response = await this.answer(req)
    } catch (error) {
      const coded = asTaskwardError(error)
      if (coded.code === 'INTERNAL') this.ctx.logger('taskward').warn(error)
      // As on our host: an unexpected failure's message (paths, internals) goes to the log, not to the client.
      const shown = coded.code === 'INTERNAL' ? new TaskwardError('INTERNAL', 'Internal error; see the DSH log.') : coded
      response = Response.json(errorBody(shown), { status: httpStatusOf(shown.code) })
    }
    const headers: Record<string, string | string[]> = { ...SECURITY_HEADERS }
    response.headers.forEach((value, key) => { headers[key] = value })
    const cookies = response.headers.getSetCookie?.() ?? []
    if (cookies.length) headers['set-cookie'] = cookies
    res.writeHead(response.status, headers)
    if (!response.body) { res.end(); return }
    Readable.fromWeb(response.body as any).pipe(res)
  }

  private async answer(req: IncomingMessage): Promise<Response> {
    const url = new URL(req.url ?? '/', this.origin)
    const method = (req.method ?? 'GET').toUpperCase()
    if (url.pathname === `${this.prefix}/login` && method === 'GET') return this.login(url)
    if (url.pathname === `${this.prefix}${GRANT_PATH}` && method === 'POST') return this.panelGrant(req)
    const found = this.routes.map((route) => ({ route, matched: route.match(url.pathname) })).find((r) => r.matched)
    if (!found) throw new TaskwardError('NOT_FOUND', `No Taskward route ${url.pathname}.`)
    const { route, matched } = found
    if (!route.methods.includes(method)) throw new TaskwardError('NOT_FOUND', `${method} ${url.pathname} is not a Taskward route.`)
    const params = matched ? { ...matched.params } : {}
    const access = route.access ?? 'session'
    let grant: TokenGrant = { kind: 'operator' }
    const sessionId = params.sessionId ?? url.searchParams.get('sessionId') ?? undefined
    if (access !== 'public') {
      const { token, viaCookie } = presentedToken(req)
      // The same decision as our host's connection (packages/protocol request-access.ts).
      grant = admitRouteRequest({
        method,
        access,
        grant: this.tokens.verify(token),
        viaCookie,
        origin: req.headers.origin,
        allowedOrigins: this.allowedOrigins(req),
        sessionId,
        loginHint: 'log in through the login link (/task console answers one)',
      })
    }
    const body = MUTATING.has(method) ? await readBody(req) : undefined
    if (body && body.length && !/json/.test(String(req.headers['content-type'] ?? 'application/json'))) {
      // Non-JSON bodies are the handler's business.
    } else if (body && body.length) {
      try { JSON.parse(body.toString('utf8')) } catch { throw new TaskwardError('BAD_REQUEST', 'body: send a JSON object.') }
    }
    const headers = new Headers()
    for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(key, value)
    const request = new Request(url, { method, headers, ...(body && body.length ? { body } : {}) })
    return route.handler(request, { params, url, grant, ...(sessionId ? { sessionId } : {}) })
  }

  /** This server as a page's Origin: loopback at its port, or the trusted Host the request names. */
  private allowedOrigins(req: IncomingMessage): string[] {
    const own = [this.origin, `http://localhost:${this.port()}`]
    const host = req.headers.host
    return host && isTrustedHost(host, this.trustedHosts) ? [...own, `http://${host}`, `https://${host}`] : own
  }

  /** The panel's login from DSH's own page (panel-access.ts): the same cookie a login link sets. */
  private panelGrant(req: IncomingMessage): Response {
    admitPanelGrant({ host: req.headers.host, origin: req.headers.origin, secFetchSite: header(req, 'sec-fetch-site'), trustedHosts: this.trustedHosts })
    // The admitted Origin is the page's own: over https (a trusted host behind TLS) the cookie never travels over http.
    const secure = req.headers.origin?.startsWith('https:') ? '; Secure' : ''
    return new Response(null, {
      status: 204,
      headers: { 'cache-control': 'no-store', 'set-cookie': `${TOKEN_COOKIE}=${this.tokens.operatorToken}; HttpOnly; SameSite=Strict; Path=${this.prefix}${secure}` },
    })
  }

  private login(url: URL): Response {
    const ticket = url.searchParams.get('ticket')
    let next: string
    if (ticket !== null) {
      const target = this.tickets.redeem(ticket)
      if (target === undefined) throw new TaskwardError('UNAUTHORIZED', 'This console link was used already or has expired; ask for a new one with /task console.')
      next = target
    } else {
      const token = url.searchParams.get('token') ?? ''
      if (this.tokens.verify(token)?.kind !== 'operator') throw new TaskwardError('UNAUTHORIZED', 'This login link is not valid (any more); ask for a new one with /task console.')
      next = sameOriginTarget(url.searchParams.get('next'), this.origin)
    }
    return new Response(null, {
      status: 303,
      // The panel's grant sets the same cookie at the same Path: one cookie, so a newer login always replaces an older one.
      headers: { location: next, 'set-cookie': `${TOKEN_COOKIE}=${this.tokens.operatorToken}; HttpOnly; SameSite=Strict; Path=${this.prefix}` },
    })
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return typeof value === 'string' ? value : undefined
}

function presentedToken(req: IncomingMessage): { token?: string, viaCookie: boolean } {
  const auth = req.headers.authorization
  if (auth?.startsWith('Bearer ')) return { token: auth.slice(7).trim(), viaCookie: false }
  for (const part of String(req.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key === TOKEN_COOKIE) return { token: rest.join('='), viaCookie: true }
  }
  return { viaCookie: false }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += chunk.length
    if (size > MAX_BODY) throw new TaskwardError('BAD_REQUEST', 'body: at most 1 MiB.')
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

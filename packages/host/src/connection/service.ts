import { Context, Schema, Service } from 'cordis'
import type { Context as KoaContext } from 'koa'
import type {} from '@cordisjs/plugin-server'
import { TaskwardError, admitRouteRequest, asTaskwardError, MUTATING_METHODS } from '@taskward/protocol'
import { TokenGrant, TokenStore } from './tokens'
import { errorResponse, readBody, sendResponse, toRequest } from './http'
import { sameOriginTarget } from './redirect'
import { storeHealth } from '../store/health'
import { describeProblems, readiness, type ReadinessReport } from './readiness'
import { verboseHealth } from '../store/verbose-health'
import { checkId } from '../sessions/ids'
import { eventStoreOf } from '../sessions/event-store'

export const TOKEN_COOKIE = 'taskward_token'

export interface RouteContext {
  /** Path parameters (`:sessionId` etc.). */
  params: Record<string, string>
  url: URL
  grant: TokenGrant
  /** The session the request is about (`:sessionId` or `?sessionId=`), already checked against the grant. */
  sessionId?: string
}

export interface ConnectionRoute {
  /** A koa-router path, e.g. `/api/sessions/:sessionId/task`. */
  path: string
  methods: ('GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE')[]
  /** `operator` routes refuse session tokens; `session` routes (default) accept the token of that session. */
  access?: 'session' | 'operator' | 'public'
  handler(request: Request, context: RouteContext): Response | Promise<Response>
}

declare module 'cordis' {
  interface Context {
    connection: Connection
  }
}

export namespace Connection {
  export interface Config {
    operatorToken?: string
    allowedOrigins: string[]
    /** Print the URL and the login link once the server listens (`npm start`). */
    announce: boolean
  }
}

const MUTATING = new Set(MUTATING_METHODS)

/** How long `announce` waits for plugins still starting before it names them. */
const ANNOUNCE_PATIENCE_MS = 15_000

/**
 * On every response. `nosniff`: a browser never reads a JSON or text answer as a script or page.
 * `same-origin`, not `no-referrer`: no URL of ours (the login link carries the token) leaks to
 * another site, while our own pages' POSTs keep their Origin header, which `no-referrer` would
 * turn into `Origin: null` and so fail the Origin check.
 */
export const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
} as const

/** Socket errors of a client that went away mid-response. */
const CLIENT_GONE = new Set(['EPIPE', 'ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE'])

/**
 * The authenticated Fetch surface over `ctx.server`. Every route needs a token (Bearer header or the
 * HttpOnly cookie set by the login link); a session token only opens its own session; a mutating
 * request must come from an allowed Origin (cookie requests always need one). Errors are JSON
 * `{error, code}` with the status of the code.
 */
export class Connection extends Service {
  static inject = ['server']
  static Config: Schema<Partial<Connection.Config>, Connection.Config> = Schema.object({
    operatorToken: Schema.string().role('secret').description('Operator token; a random one per start when empty.'),
    allowedOrigins: Schema.array(Schema.string()).default([]).description('Extra origins allowed to send mutating requests.'),
    announce: Schema.boolean().default(false).description('Print the URL and the login link when the server listens.'),
  })

  readonly tokens: TokenStore
  private readonly home: Context

  constructor(ctx: Context, public override config: Connection.Config = { allowedOrigins: [], announce: false }) {
    super(ctx, 'connection', true)
    this.home = ctx
    this.tokens = new TokenStore(config.operatorToken)
    this.mountFallback()
    this.mountBuiltins()
    this.routeServerErrors(ctx)
    const listening = { value: !!ctx.server._http?.listening }
    ctx.on('server/ready', () => { listening.value = true })
    this.readiness = () => readiness(this.home, listening.value)
    if (config.announce) this.announceWhenReady(ctx)
  }

  /**
   * Koa prints every error of a response to stderr, among them the socket's EPIPE / ECONNRESET when a
   * client leaves while a stream is written (a live view closed, an SSE reader cancelling): that is the
   * client leaving, not a fault. Those are dropped; any other goes to the host log.
   */
  private routeServerErrors(ctx: Context) {
    const koa = ctx.server._koa
    const logger = ctx.logger('connection')
    const silent = koa.silent
    koa.silent = true
    const onError = (error: any) => {
      if (CLIENT_GONE.has(error?.code) || error?.status === 404 || error?.expose) return
      logger.warn(error)
    }
    koa.on('error', onError)
    ctx.on('dispose', () => {
      koa.off('error', onError)
      koa.silent = silent
    })
  }

  /** Whether the server listens and every plugin cordis.yml configures is up (`/health`). */
  readonly readiness: () => ReadinessReport

  /**
   * Print the link only once every configured plugin is up (a first request must not meet a 404),
   * or say loudly which plugin failed, or which are still waiting after a while.
   */
  private announceWhenReady(ctx: Context) {
    const started = Date.now()
    let reportedFailed = ''
    let reportedPending = false
    ctx.effect(() => {
      const timer = setInterval(() => {
        const report = this.readiness()
        if (report.ready) {
          clearInterval(timer)
          // The one place the operator token is shown: the person who started the host needs the link.
          console.log(`\nTaskward is running at ${this.baseUrl}\nOpen the console (logs you in): ${this.loginUrl}\nPress Ctrl-C to stop.\n`)
          return
        }
        const failed = describeProblems(report.failed)
        if (failed && failed !== reportedFailed) {
          reportedFailed = failed
          console.error(`\nTaskward is not ready: ${report.failed.length === 1 ? 'a plugin' : 'plugins'} of cordis.yml failed to start:\n${failed}\n`
            + 'Fix the row(s) above and start again; /health answers 503 until every plugin is up.\n')
        }
        if (!reportedPending && report.pending.length && Date.now() - started > ANNOUNCE_PATIENCE_MS) {
          reportedPending = true
          console.error(`\nTaskward is still not ready after ${ANNOUNCE_PATIENCE_MS / 1000} s; waiting for:\n${describeProblems(report.pending)}\n`)
        }
      }, 200)
      return () => clearInterval(timer)
    })
  }

  /** The server's base URL (after it listens). */
  get baseUrl() {
    return this.home.server.selfUrl
  }

  /** The link that logs a browser in as operator (sets the cookie). */
  get loginUrl() {
    return `${this.baseUrl}/login?token=${encodeURIComponent(this.tokens.operatorToken)}`
  }

  issueSessionToken(sessionId: string) {
    return this.tokens.issueSessionToken(sessionId)
  }

  /** Register a route; disposing the registering plugin removes it. */
  register(route: ConnectionRoute) {
    const middleware = async (koa: KoaContext) => {
      await sendResponse(koa, await this.dispatch(koa, route))
    }
    // plugin-server parses bodies unless told not to; handlers get the raw body in a Fetch Request.
    ;(middleware as any)[Symbol.for('noParseBody')] = true
    const server = this.ctx.server
    for (const method of route.methods) {
      server.register(route.path, [method], middleware as any)
    }
  }

  private async dispatch(koa: KoaContext, route: ConnectionRoute): Promise<Response> {
    try {
      const url = new URL(koa.request.href)
      const params: Record<string, string> = { ...(koa as any).params }
      let grant: TokenGrant = { kind: 'operator' }
      const sessionId = params.sessionId ?? url.searchParams.get('sessionId') ?? undefined
      for (const id of [params.sessionId, url.searchParams.get('sessionId')]) if (id !== undefined && id !== null) checkId(id)
      if (route.access !== 'public') {
        const header = koa.get('authorization')
        const bearer = header.startsWith('Bearer ') ? header.slice(7).trim() : undefined
        const cookie = koa.cookies.get(TOKEN_COOKIE)
        grant = admitRouteRequest({
          method: koa.method,
          access: route.access ?? 'session',
          grant: this.tokens.verify(bearer ?? cookie),
          viaCookie: !bearer,
          origin: koa.get('origin') || undefined,
          allowedOrigins: [`${koa.protocol}://${koa.host}`, ...this.config.allowedOrigins],
          sessionId,
          loginHint: 'open the login link printed at start',
          originHint: 'add it to connection.allowedOrigins if it should',
        })
      }
      let body: Buffer | undefined
      if (MUTATING.has(koa.method)) {
        body = await readBody(koa)
        if (body.length && (koa.get('content-type') || 'application/json').includes('json')) {
          try {
            JSON.parse(body.toString('utf8'))
          } catch {
            throw new TaskwardError('BAD_REQUEST', 'The request body is not valid JSON.')
          }
        }
      }
      const response = await route.handler(toRequest(koa, body), { params, url, grant, sessionId })
      // A change is acknowledged once durable: what it appended to a session in the middle of a model
      // step was staged with the step's events (docs/host.md, sessions), so write those now.
      if (MUTATING.has(koa.method)) await eventStoreOf(this.home).settled()
      return response
    } catch (error) {
      const coded = asTaskwardError(error)
      if (coded.code === 'INTERNAL') this.home.logger('connection').warn(error)
      return errorResponse(coded.code === 'INTERNAL' ? new TaskwardError('INTERNAL', 'Internal error; see the host log.') : coded)
    }
  }

  /**
   * Wraps every route: sets the headers every response carries (SECURITY_HEADERS) and answers unknown
   * paths with `{error, code}` like every other error (instead of Koa's plain "Not Found").
   */
  private mountFallback() {
    const fallback = async (koa: KoaContext, next: () => Promise<unknown>) => {
      koa.set(SECURITY_HEADERS)
      await next()
      if (koa.status === 404 && koa.body == null) {
        await sendResponse(koa, errorResponse(new TaskwardError('NOT_FOUND', `Nothing answers ${koa.method} ${koa.path} here; check the path and method (docs/host.md lists the routes).`)))
      }
    }
    ;(fallback as any)[Symbol.for('noParseBody')] = true
    // Registered before any route, so it wraps all of them.
    this.home.server.all('/(.*)', fallback as any)
  }

  private mountBuiltins() {
    this.register({
      path: '/health',
      methods: ['GET'],
      access: 'public',
      // Public, so it names rows only; the reasons go to the terminal that started the host.
      handler: async (request, { url }) => {
        if (url.searchParams.has('verbose')) return verboseHealth(this.home, request, this.tokens)
        const { ready, failed, pending } = this.readiness()
        if (!ready) {
          return Response.json({ ok: false, ready: false, failed: failed.map((p) => p.id), pending: pending.map((p) => p.id) }, { status: 503 })
        }
        const store = await storeHealth(this.home)
        return store.ok ? Response.json({ ok: true, ready: true }) : Response.json({ ...store, ready: true }, { status: 503 })
      },
    })
    this.register({
      path: '/login',
      methods: ['GET'],
      access: 'public',
      handler: (request, { url }) => {
        const token = url.searchParams.get('token') ?? ''
        const grant = this.tokens.verify(token)
        if (!grant) throw new TaskwardError('UNAUTHORIZED', 'This login link is not valid (the host prints a new one at each start).')
        return new Response(null, {
          status: 303,
          headers: {
            location: sameOriginTarget(url.searchParams.get('next'), url.origin),
            'set-cookie': `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`,
          },
        })
      },
    })
  }
}

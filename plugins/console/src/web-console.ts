import type { Context } from 'cordis'
import { provideService } from '@taskward/cordis-compat'
import type { Session } from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import { loadedConfig } from '@taskward/protocol'
import { Config } from './config'
import type { DemoOutcome } from './demo/run'
import { registerApi } from './routes/api'
import { LiveUpdates, registerLiveUpdates } from './routes/live'
import { basePath, registerPages } from './routes/pages'

/** How long a `/task console` link stays valid (it logs in once). */
export const CONSOLE_LINK_TTL_MS = 10 * 60 * 1000

/** A connection that hands out one-time login links (the DSH adapter's; docs/host.md). */
interface LinkIssuer {
  issueLoginLink(next: string, ttlMs: number): string
}

/**
 * The console's pages, JSON views and live updates on the host's connection: the host-neutral part
 * of the `webConsole` service (it loads in our host and inside DSH). Where the connection hands out
 * one-time login links, `/task console` answers one (to the session's impact panel when a repair
 * proposal waits).
 */
export class ConsoleRoutes {
  static readonly provide = 'webConsole'
  static inject = ['connection', 'sessions', 'supervisor']
  static Config = Config

  readonly live: LiveUpdates
  readonly config: Config
  private readonly home: Context
  /** The demo's outcome: only our host's WebConsole runs it (it needs our operator, agents and models). */
  readonly demo: Promise<DemoOutcome> = Promise.resolve({ status: 'skipped', reason: 'this host loads the console without its demo' })

  constructor(ctx: Context, config: Partial<Config> = {}) {
    this.home = ctx
    this.config = Config(loadedConfig('console', config))
    registerPages(ctx)
    registerApi(ctx)
    this.live = new LiveUpdates(ctx, this.config.heartbeatSeconds * 1000)
    registerLiveUpdates(ctx, this.live)
    const issuer = ctx.connection as unknown as Partial<LinkIssuer>
    if (typeof issuer.issueLoginLink === 'function') {
      ctx.supervisor.registerSubcommand('console', ({ session }) => consoleLink(ctx, issuer as LinkIssuer, session))
    }
    provideService(ctx, 'webConsole', this)
  }

  /** The path of a session's impact panel on this server (what `/task` shows when a proposal waits). */
  impactLink(sessionId: string) {
    return `${basePath(this.home)}/sessions/${encodeURIComponent(sessionId)}#impact`
  }
}

/** `/task console`: a one-time login link to this session's page (its impact panel when a proposal waits). */
export async function consoleLink(ctx: Context, issuer: LinkIssuer, session: Session) {
  const state = await ctx.supervisor.state(session)
  const waiting = state.proposals.findLast((p) => p.status === 'pending')
  const next = `${basePath(ctx)}/sessions/${encodeURIComponent(session.id)}${waiting ? '#impact' : ''}`
  const url = issuer.issueLoginLink(next, CONSOLE_LINK_TTL_MS)
  const minutes = CONSOLE_LINK_TTL_MS / 60_000
  return {
    url,
    ...(waiting ? { awaitingDecision: { id: waiting.proposal.id, title: waiting.proposal.title } } : {}),
    message: (waiting ? `A repair proposal waits for your decision ("${waiting.proposal.title}"): review its impact and confirm or decline at ${url}`
      : `Open the Taskward console at ${url}`) + ` — the link logs this browser in once and expires in ${minutes} minutes; ask /task console again for another.`,
  }
}

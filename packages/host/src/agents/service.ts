import { Context, Schema, Service } from 'cordis'
import { TaskwardError, asTaskwardError } from '@taskward/protocol'
import { Agent, TurnSummary } from './agent'
import { StepGuards, type StepGuard } from './step-guards'
import type { Acknowledgement, Session } from '../sessions/session'
import { SessionLeases, holderGone, leaseHeld, leaseOf, revokeLapsedLease, type LeaseConfig, type LeaseView } from '../sessions/lease'
import type { Tools } from '../tools/service'
import { original } from '../original'
import { onExit } from '../exit'
import { catchUpWithStore } from '../sessions/catch-up'
import { directEmitter } from '../sessions/emit'

export interface CreateAgentOptions {
  sessionId?: string
  cwd?: string
  preset?: string
  model: string
  role?: string
  parentId?: string
  /** For a new session: what its row's write waits for (see `CreateSessionOptions.ack`). */
  ack?: Acknowledgement
}

declare module 'cordis' {
  interface Context {
    agents: Agents
  }
  interface Events {
    /**
     * Return (or throw) a TaskwardError to refuse the step. Kept for compatibility: prefer
     * `ctx.agents.stepGuard(fn)`, which a turn calls directly (a dispatch costs microseconds per step).
     */
    'agent/before-step'(agent: Agent): any
    /** DSH's name for `agent/before-step` (same contract), kept so a DSH plugin author is at home. */
    'agent/pre-step'(agent: Agent): any
    /** Return (or throw) a TaskwardError to refuse the resume. */
    'agent/before-resume'(session: Session): any
    /**
     * An agent was spawned (created or resumed), before anything is queued to it: a policy that holds
     * queues (`agent.hold()`) sets its hold here, synchronously, so that no first turn slips past it.
     */
    'agent/created'(agent: Agent): void
    'agent/turn-end'(agent: Agent, summary: TurnSummary): void
    'agent/state'(agent: Agent): void
    /** Streamed assistant text of the running step (not recorded; the whole text is). */
    'agent/text-delta'(agent: Agent, delta: string): void
  }
}

export namespace Agents {
  export interface Config extends LeaseConfig {
    maxStepsPerTurn: number
  }
}

/** One agent per session, in memory. After a restart none exists until `resume`. */
export class Agents extends Service {
  static inject = ['database', 'sessions', 'models', 'tools']
  static Config: Schema<Partial<Agents.Config>, Agents.Config> = Schema.object({
    maxStepsPerTurn: Schema.natural().min(1).default(25).description('Model steps one turn may take.'),
    leaseDuration: Schema.natural().min(1000).default(15_000)
      .description('MySQL/MariaDB only: how long (ms) a host keeps driving a main session\'s agent without renewing its lease; another host may take the session once it lapses.'),
    leaseRenewInterval: Schema.natural().min(100).default(5_000)
      .description('MySQL/MariaDB only: how often (ms) the host renews the leases it holds; keep it well under leaseDuration.'),
  })

  private live = new Map<string, Agent>()
  private readonly home: Context
  private readonly stepGuards: StepGuards
  /**
   * The tool registry itself, read once: `tools` is a required inject, so this service restarts when it
   * changes, and every tool call of every turn would otherwise pay cordis' context getter.
   */
  private readonly tools: Tools
  /** The other required injects a create reads, read once for the same reason. */
  private readonly kernel: { readonly models: Context['models'], readonly sessions: Context['sessions'], readonly database: Context['database'] }
  private readonly emitCreated: (agent: Agent) => void

  private readonly leases: SessionLeases

  constructor(ctx: Context, public override config: Agents.Config = { maxStepsPerTurn: 25, leaseDuration: 15_000, leaseRenewInterval: 5_000 }) {
    super(ctx, 'agents', true)
    this.home = ctx
    this.stepGuards = new StepGuards(ctx)
    this.tools = original(ctx.tools)
    this.kernel = { models: original(ctx.models), sessions: original(ctx.sessions), database: original(ctx.database) }
    this.emitCreated = directEmitter<[Agent]>(ctx, 'agent/created')
    this.leases = new SessionLeases(ctx, { leaseDuration: config.leaseDuration ?? 15_000, leaseRenewInterval: config.leaseRenewInterval ?? 5_000 })
    ctx.on('dispose', () => {
      for (const agent of this.live.values()) agent.dispose()
      this.live.clear()
      // Given up at once, so another host may resume these sessions without waiting for a lapse.
      return this.leases.releaseAll()
    })
    // The cordis CLI ends the process on SIGINT/SIGTERM after awaiting `exit`, without disposing.
    onExit(ctx, 'releasing session leases', ctx.logger('agents'), () => this.leases.releaseAll())
  }

  /** A main session's agent runs on one host at a time (MySQL leases; nothing on SQLite). */
  private async lease(session: Session) {
    if (session.role === 'main' && this.leases.enabled) await this.leases.acquire(session)
  }

  /**
   * The live lease of another host on main session `session` (MySQL/MariaDB), or undefined when this
   * host may write to it: it holds the lease, nobody does, the holder's lease lapsed or its holder was
   * killed on this machine (as `resume` takes it then). For writes that do not go through this host's
   * agent (an operator's `/task` command), which must not race the driving host's turn. A lapsed lease
   * is fenced off first, as a resume's take fences it: its holder may be frozen, not gone, and thawed it
   * would renew the same token and drive on across the write.
   */
  async drivenElsewhere(session: Session): Promise<LeaseView | undefined> {
    if (session.role !== 'main' || !this.leases.enabled || this.leases.holds(session.id)) return
    const lease = await leaseOf(this.home, session.id)
    if (!lease || lease.holder === this.leases.holder || lease.expiresInMs > 0) return this.liveElsewhere(lease)
    if (await revokeLapsedLease(this.home, session.id, lease)) return
    // No longer that lapsed lease: its holder renewed it, or another host took it.
    return this.liveElsewhere(await leaseOf(this.home, session.id))
  }

  /** `lease` when it is another host's, live, and its holder not killed on this machine. */
  private liveElsewhere(lease: LeaseView | undefined) {
    return lease && lease.holder !== this.leases.holder && lease.expiresInMs > 0 && !holderGone(lease.holder) ? lease : undefined
  }

  /** Create the agent of a new session (`cwd`) or of an existing one (`sessionId`). */
  async create(options: CreateAgentOptions): Promise<Agent> {
    const { models, sessions, database } = original(this).kernel
    models.get(options.model)
    let session: Session
    if (options.sessionId) {
      session = await sessions.get(options.sessionId)
      if (this.live.has(session.id)) throw new TaskwardError('AGENT_BUSY', `Session ${session.id} already has an agent; use agents.get().`)
      if (session.model !== options.model || (options.role && session.role !== options.role)) {
        // Remembered so that `resume` after a restart brings back the same model and role.
        await database.set('taskward_session', { id: session.id }, { model: options.model, role: options.role ?? session.role })
        session.model = options.model
        session.role = options.role ?? session.role
      }
      await this.lease(session)
      // Another create or resume may have won while the row was written: one agent per session.
      if (this.live.has(session.id)) throw new TaskwardError('AGENT_BUSY', `Session ${session.id} already has an agent; use agents.get().`)
    } else if (options.cwd) {
      session = await sessions.create({ cwd: options.cwd, preset: options.preset, role: options.role, model: options.model, parentId: options.parentId, ack: options.ack })
      await this.lease(session)
    } else {
      throw new TaskwardError('BAD_REQUEST', 'Creating an agent needs a sessionId or a cwd.')
    }
    if (this.live.has(session.id)) throw new TaskwardError('AGENT_BUSY', `Session ${session.id} already has an agent; use agents.get().`)
    return this.spawn(session, options.model, options.role ?? session.role)
  }

  /**
   * Ask `guard` before every model step of every agent, for as long as the calling plugin is loaded
   * (disposing it removes the guard). Guards run directly, in registration order, before any
   * `agent/before-step` listener; the first refusal stops the turn. Returns the disposer.
   */
  stepGuard(guard: StepGuard): () => void {
    return this.stepGuards.add(this.ctx, guard)
  }

  get(sessionId: string): Agent | undefined {
    return this.live.get(sessionId)
  }

  /**
   * Bring a session's agent back (after a restart, or to check it may run). `agent/before-resume`
   * listeners may refuse with a coded error. The agent comes back idle: nothing continues by itself.
   */
  async resume(sessionId: string): Promise<Agent> {
    const session = await original(this).kernel.sessions.get(sessionId)
    // Another host drives it: refused before the listeners, which may write to the session (recovery
    // reconciles its journal) and would race that host's turn. Read only: a lapsed lease is taken below.
    if (session.role === 'main' && this.leases.enabled && !this.leases.holds(session.id)) {
      const lease = this.liveElsewhere(await leaseOf(this.home, session.id))
      if (lease) throw leaseHeld(session.id, lease.holder, lease.expiresInMs)
    }
    // Another host may have appended while it drove the session (MySQL): the listeners (reader
    // admission, recovery) judge the log as it stands, not as this process last wrote it. After the
    // lease check: a host that released the lease no longer appends.
    if (this.leases.enabled) await catchUpWithStore(this.home, session)
    let answer: unknown
    try {
      answer = await this.home.serial('agent/before-resume', session)
    } catch (error) {
      answer = error
    }
    if (answer) throw asTaskwardError(answer)
    // Renews this host's lease, takes a lapsed one, or refuses with LEASE_HELD (even for an agent
    // already live here: it may have lost the lease while this host was paused).
    await this.lease(session)
    const existing = this.live.get(sessionId)
    if (existing) return existing
    if (!session.model) throw new TaskwardError('BAD_REQUEST', `Session ${sessionId} never had an agent; create one with a model.`)
    return this.spawn(session, session.model, session.role)
  }

  list() {
    return [...this.live.values()]
  }

  /**
   * Let a session's agent go once it is idle (its turn and its queue done): disposed and no longer
   * live here, so a host that ran thousands of short-lived agents (reviewers) does not keep them all.
   * Its session and log stay; `resume` brings an agent back. A turn queued before it went idle keeps it.
   */
  async release(sessionId: string): Promise<void> {
    const self = original(this)
    const agent = self.live.get(sessionId)
    if (!agent) return
    await agent.whenIdle()
    // Another turn may have been queued as it went idle: then it is not released.
    if (self.live.get(sessionId) !== agent || agent.state !== 'idle' || agent.queued) return
    self.live.delete(sessionId)
    agent.dispose()
  }

  private spawn(session: Session, model: string, role: string) {
    // `this` may be cordis' tracing view (a call through ctx.agents), which wraps the registry it reads
    // again: hand the agent the object itself.
    const self = original(this)
    const agent = new Agent(self.home, session, model, role, self.config, self.stepGuards, self.tools, self.kernel.models)
    self.live.set(session.id, agent)
    self.emitCreated(agent)
    return agent
  }
}

export { Agent }
export { StepGuards, type StepGuard } from './step-guards'

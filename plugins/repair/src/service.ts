import type { Context } from 'cordis'
import { onDispose, provideService } from '@taskward/cordis-compat'
import type { Agent, Session } from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import type {} from '@taskward/plugin-workspace'
import { loadedConfig, repairReader, TaskwardError, type RecordReader, type RepairBinding, type SupervisorState, type WorkspaceStamp } from '@taskward/protocol'
import { Config } from './config'
import { catchUpWithStore, KeyedLock } from '@taskward/host'
import { proposeRepair, type ProposeOutcome, type ProposeRequest } from './propose'
import { confirmRepair, declineRepair, type ConfirmOutcome, type DeclineOutcome } from './confirm'
import { ClickRelay } from './relay'
import { repairsView, type RepairsView } from './view'
import { registerRepairTools } from './tools'
import { registerRepairRoutes } from './routes'

declare module 'cordis' {
  interface Context {
    repair: RepairService
  }
}

/** The part of the optional `admission` service used here. */
interface ReaderRegistry {
  registerReader(reader: RecordReader): unknown
}

/**
 * The `repair` service: proposals of repairs to complete tasks, the user's confirmation and decline,
 * and the view of both. It owns the `dsh-task-supervisor-repair` reader's registration with
 * `admission`, the two proposal tools and the HTTP routes. See docs/repair.md.
 */
export class RepairService {
  static readonly provide = 'repair'
  static inject = {
    supervisor: { required: true },
    sessions: { required: true },
    agents: { required: true },
    tools: { required: true },
    connection: { required: true },
    workspace: { required: false },
    admission: { required: false },
  }

  static Config = Config

  /** Serializes the repair decisions of each main session. */
  readonly locks = new KeyedLock()
  /** Confirm clicks between hosts that share a MySQL/MariaDB store (see relay.ts). */
  relay?: ClickRelay
  private readonly home: Context
  readonly config: Config

  constructor(ctx: Context, config: Partial<Config> = {}) {
    this.home = ctx
    this.config = Config(loadedConfig('repair', config))
    // One owner registers the repair namespace's reader: this plugin, for as long as it is loaded.
    ctx.inject(['admission'], (ctx) => {
      (ctx as Context & { admission: ReaderRegistry }).admission.registerReader(repairReader)
    })
    registerRepairTools(ctx, this)
    registerRepairRoutes(ctx, this)
    // Relaying clicks between hosts of one shared store (relay.ts) needs our kernel's `database`. A
    // forked inject, not an entry of `inject`: cordis 4 (DSH) treats every inject as required, and DSH
    // has no `database` (one process per session log, nothing to relay), so there this never runs.
    ctx.inject(['database'], (ctx) => {
      const relay = new ClickRelay(ctx, this.config, async (sessionId, binding) =>
        confirmRepair(this, await this.mainSession(sessionId), binding, { relayed: true }))
      this.relay = relay
      onDispose(ctx, () => { if (this.relay === relay) this.relay = undefined })
    })
    provideService(ctx, 'repair', this)
  }

  /** This plugin's logger (a cordis 3 `Service` had one; both versions have `ctx.logger(name)`). */
  get logger() {
    return this.home.logger('repair')
  }

  get supervisor() {
    return this.home.supervisor
  }

  /**
   * The main agent, brought back if it is not live (after a restart), so that a reopen always happens
   * in its maintenance window and an admission refusal (`READER_UNAVAILABLE`) fails the click before
   * anything is written. A session that never had an agent has nothing to wake: undefined.
   */
  async mainAgent(main: Session): Promise<Agent | undefined> {
    const live = this.supervisor.mainAgent(main.id)
    if (live) return live
    if (!main.model) return undefined
    return this.home.agents.resume(main.id)
  }

  /**
   * The main agent after this host lost the session's lease with nobody holding it now: the resume
   * takes the lapsed lease again for the live agent (or refuses `LEASE_HELD` if another host took it).
   */
  takeBack(main: Session): Promise<Agent> {
    return this.home.agents.resume(main.id)
  }

  /**
   * A main session by id (`SESSION_NOT_FOUND`, or `BAD_REQUEST` for another kind of session), caught
   * up with the store's log: on a store shared by several hosts every repair read and decision starts
   * from what the other hosts appended, not from what this host last saw.
   */
  async mainSession(sessionId: string): Promise<Session> {
    const session = await this.home.sessions.get(sessionId)
    if (session.role !== 'main') {
      throw new TaskwardError('BAD_REQUEST', `Session ${sessionId} is a ${session.role} session; repairs belong to main sessions.`, { sessionId })
    }
    await catchUpWithStore(this.home, session)
    return session
  }

  /** The supervisor state of a main session; a poisoned one refuses every repair decision. */
  async readState(main: Session): Promise<SupervisorState> {
    const state = await this.supervisor.state(main)
    if (state.poisoned) {
      throw new TaskwardError('SUPERVISOR_POISONED', `${state.poisoned.message}. Nothing was decided; a person must inspect the session log.`,
        { seq: state.poisoned.seq })
    }
    return state
  }

  /** Stamp the main session's workspace (`ARTIFACT_UNAVAILABLE` without the workspace service). */
  async stamp(main: Session): Promise<WorkspaceStamp> {
    const workspace = this.home.get('workspace')
    if (!workspace) {
      throw new TaskwardError('ARTIFACT_UNAVAILABLE',
        'The workspace service is not loaded, so the workspace cannot be stamped; load @taskward/plugin-workspace and try again.')
    }
    return workspace.stamp(main.cwd)
  }

  /** Propose a repair in `mainSessionId` (see `proposeRepair`). */
  async propose(mainSessionId: string, request: ProposeRequest): Promise<ProposeOutcome> {
    return proposeRepair(this, await this.mainSession(mainSessionId), request)
  }

  /** The user's Confirm click (see `confirmRepair`). */
  async confirm(mainSessionId: string, binding: RepairBinding): Promise<ConfirmOutcome> {
    return confirmRepair(this, await this.mainSession(mainSessionId), binding)
  }

  /** The user's Decline click (see `declineRepair`). */
  async decline(mainSessionId: string, binding: RepairBinding): Promise<DeclineOutcome> {
    return declineRepair(this, await this.mainSession(mainSessionId), binding)
  }

  /** Proposals with quoted evidence, and the current task (what the console's GET returns). */
  async view(mainSessionId: string): Promise<RepairsView> {
    const main = await this.mainSession(mainSessionId)
    return repairsView(main, await this.supervisor.state(main))
  }
}

import type { Context } from 'cordis'
import { randomUUID } from 'node:crypto'
import { onDispose } from '@taskward/cordis-compat'
import { TaskwardError, asTaskwardError } from '@taskward/protocol'
import { CONSULTATION_MARKER, type ConsultationMarker } from './consultations'
import type { DshAgent, DshAgents, DshUserMessage } from './dsh-types'
import { SUPERVISION_PRESET } from './supervision-preset'
import type { DshSessionsContract } from './sessions'
import type { SessionView } from './session-view'

/** A step guard of Taskward's contract: a coded refusal (returned or thrown) stops the step. */
export type StepGuard = (agent: AgentView) => TaskwardError | undefined | void | Promise<TaskwardError | undefined | void>

/** The `source` of a message Taskward's controller queues for the agent (a DSH plugin message). */
const FOLLOWUP_SOURCE = { kind: 'plugin', plugin: 'taskward' } as const

/**
 * Taskward's `Agent` (docs/host.md) over a DSH agent. DSH owns the turn loop and its queue (the inbox);
 * `hold()` is kept here and enforced by the adapter's `agent/pre-step` listener (a held agent's step is
 * refused), because rc.8 has no hold of its own. Turn ends are announced as `agent/turn-end`.
 */
export class AgentView {
  /** Holds taken by `hold()`; the step guard refuses while any is taken. */
  readonly holds = new Set<symbol>()
  maintenance = 0
  /** What the running turn ended with, for its `agent/turn-end` summary. */
  turn: { refused?: { code: string, message: string }, error?: { code: string, message: string }, cancelled?: boolean, steps: number, toolCalls: string[] } = { steps: 0, toolCalls: [] }

  constructor(readonly dsh: DshAgent, readonly session: SessionView) {}

  get id() { return this.dsh.id }
  get state(): 'idle' | 'running' | 'maintenance' {
    return this.maintenance ? 'maintenance' : this.dsh.status
  }
  /** Messages waiting for a turn (DSH's inbox). */
  get queued() { return this.dsh.inbox.nextTurn.length }
  get held() { return this.holds.size > 0 }

  followup(message: string, meta: Record<string, any> = {}): string {
    const id = `taskward-${randomUUID()}`
    // A reviewer's prompt names its review job: what marks a Taskward reviewer's log (reviewer-tools.ts).
    const source = { ...FOLLOWUP_SOURCE, origin: String(meta.origin ?? 'plugin'), ...(typeof meta.jobId === 'string' ? { jobId: meta.jobId } : {}) }
    const dsh: DshUserMessage = { id, role: 'user', content: [{ type: 'text', text: message }], source }
    this.dsh.followup(dsh)
    return id
  }

  hold(): () => void {
    const token = Symbol('hold')
    this.holds.add(token)
    return () => { this.holds.delete(token) }
  }

  whenIdle() { return this.dsh.whenIdle() }

  async runMaintenance<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.dsh.runMaintenance(async () => {
      this.maintenance++
      try {
        return await fn()
      } finally {
        this.maintenance--
      }
    })
  }

  cancel() {
    this.turn.cancelled = true
    this.dsh.cancel({ kind: 'plugin', plugin: 'taskward' })
  }
}

/**
 * Taskward's `agents` service over DSH's registry: views of DSH's live agents, step guards run from
 * the adapter's `agent/pre-step` listener, and `resume` through DSH's `agents.resume`.
 */
export class DshAgentsContract {
  readonly guards = new Set<StepGuard>()
  private readonly views = new WeakMap<DshAgent, AgentView>()
  protected ctx: Context

  constructor(ctx: Context, private readonly dsh: DshAgents, private readonly sessions: DshSessionsContract, private readonly offerTools: (agent: DshAgent, role: 'reviewer' | 'consultation') => void = () => {}) {
    this.ctx = ctx
  }

  view(agent: DshAgent): AgentView {
    let view = this.views.get(agent)
    if (!view) {
      view = new AgentView(agent, this.sessions.view(agent.session))
      this.views.set(agent, view)
    }
    return view
  }

  get(sessionId: string): AgentView | undefined {
    const agent = this.dsh.get(sessionId)
    return agent && this.view(agent)
  }

  list(): AgentView[] {
    return this.dsh.list().map((agent) => this.view(agent))
  }

  /**
   * Our host disposes a finished reviewer's agent here; DSH's agents are DSH's own registry, kept and
   * ended as DSH decides (its sessions list shows them), so Taskward leaves them as they are.
   */
  async release(_sessionId: string): Promise<void> {}

  async resume(sessionId: string): Promise<AgentView> {
    const live = this.get(sessionId)
    if (live) return live
    try {
      // The same single, deadline-bounded resume as a route's first touch (sessions.ts `open`).
      return this.view(await this.sessions.open(sessionId))
    } catch (error) {
      if (TaskwardError.is(error, 'STORE_UNAVAILABLE') || TaskwardError.is(error, 'BAD_REQUEST')) throw error
      throw new TaskwardError('SESSION_NOT_FOUND', `DSH could not resume session ${sessionId}: ${(error as Error).message}`)
    }
  }

  /**
   * A new DSH session with its agent, on DSH's configured model: how the supervisor starts a reviewer
   * (`role: 'reviewer'`, `parentId` = the main session) and `/task consult` a consultation (`role:
   * 'consultation'`: its log gets the marker that names its parent, consultations.ts). The agent belongs
   * to the Taskward plugin (it goes when the bundle is unloaded); what it may run is decided by the
   * supervisor's tool guard.
   */
  async create(options: { cwd?: string, model?: string, role?: string, parentId?: string }): Promise<AgentView> {
    const sessionId = `session-${randomUUID()}`
    if (options.role === 'consultation' && !options.parentId) throw new TaskwardError('BAD_REQUEST', 'A consultation needs the main session it works for (parentId).')
    if (options.role === 'reviewer') this.sessions.reviewers.add(sessionId)
    if (options.role === 'consultation') this.sessions.consultations.add(sessionId)
    let agent: DshAgent
    try {
      // DSH's configured model is the one the main session runs on (a new agent without options has none).
      const parent = options.parentId ? this.dsh.get(options.parentId) : this.dsh.list()[0]
      const agentOptions = parent?.options ? { ...(parent.options.provider ? { provider: parent.options.provider } : {}), ...(parent.options.model ? { model: parent.options.model } : {}) } : undefined
      // A consultation works in the workspace with DSH's own tools (read, glob, grep…): its agent mounts
      // the supervision preset its marker selects, as it does when DSH resumes it after a restart. So does
      // a reviewer, whose tools are then restricted to DSH's read-only read, glob and grep (reviewer-tools.ts).
      // A bare agent has no DSH tool at all (only the ones Taskward offers it).
      const presets = (options.role === 'consultation' || options.role === 'reviewer') && this.sessions.beforeRecord ? this.sessions.resume().presets : undefined
      const handle = await this.dsh.create({
        sessionId,
        meta: { ...(options.cwd ? { cwd: options.cwd } : {}), ...(options.parentId ? { parentSession: options.parentId } : {}) },
        ...(agentOptions ? { agentOptions } : {}),
        ...(presets ? { setup: async (agentCtx: unknown) => { await presets.mount(agentCtx, (await presets.resolve(SUPERVISION_PRESET)).id) } } : {}),
      })
      agent = 'agent' in handle ? handle.agent : handle
    } catch (error) {
      this.sessions.reviewers.delete(sessionId)
      this.sessions.consultations.delete(sessionId)
      throw new TaskwardError('SERVICE_UNAVAILABLE', `DSH could not create a session for Taskward: ${(error as Error).message}`)
    }
    const view = this.view(agent)
    if (options.role === 'reviewer') {
      try {
        this.offerTools(agent, 'reviewer')
      } catch (error) {
        // Never a reviewer that is offered write or bash: no review runs on this DSH instead.
        agent.cancel({ kind: 'plugin', plugin: 'taskward' })
        throw new TaskwardError('SERVICE_UNAVAILABLE', `DSH could not hold a reviewer to read-only tools (${(error as Error).message}); `
          + 'no review runs here. Use the DSH version Taskward supports (docs/dsh.md).', { sessionId })
      }
    }
    if (options.role === 'consultation') {
      // The marker that keeps the role across a restart (DSH's header has none); it also selects the
      // supervision preset in the consultation (its first Taskward record), so DSH without the bundle refuses it.
      await view.session.append<ConsultationMarker>(CONSULTATION_MARKER, { mainSessionId: options.parentId! })
      this.offerTools(agent, 'consultation')
    }
    return view
  }

  stepGuard(guard: StepGuard) {
    const guards = this.guards
    guards.add(guard)
    return onDispose(this.ctx, () => { guards.delete(guard) })
  }

  /**
   * The first refusal of the step guards for `agent`'s step `step` of a turn, or undefined. A hold
   * (our host: no queued turn starts) refuses only a turn's first step: the running turn may finish.
   */
  async refusal(agent: AgentView, step = 1): Promise<TaskwardError | undefined> {
    if (agent.held && step <= 1) return new TaskwardError('TASK_NOT_EXECUTING', 'The task is under review; this session continues after the verdict.')
    for (const guard of [...this.guards]) {
      try {
        const refused = await guard(agent)
        if (refused) return asTaskwardError(refused)
      } catch (error) {
        return asTaskwardError(error)
      }
    }
  }
}

import { Context, Schema, Service } from 'cordis'
import { resolve } from 'node:path'
import { TaskwardError } from '@taskward/protocol'
import type { Agent, QueuedTurn } from '../agents/agent'
import type { CommandReply } from '../commands'
import type { Session } from '../sessions/session'
import { prepareRoots, resolveWorkspaceDirectory } from './workspace-roots'
import { registerOperatorRoutes } from './operator-routes'

declare module 'cordis' {
  interface Context {
    operator: Operator
  }
}

export namespace Operator {
  export interface Config {
    workspaceRoots: string[]
    defaultModel: string
  }
}

/** What `input` did: ran a command (its reply), or queued a chat turn. */
export type InputOutcome =
  | { kind: 'command', reply: CommandReply }
  | { kind: 'queued', id: string, position: number, running: boolean, held: boolean }

/** Token totals of a session, from its `model/usage` events. */
export interface UsageTotals {
  steps: number
  promptTokens: number
  completionTokens: number
  /** Of `promptTokens`, those the endpoints served from their prompt caches. */
  cachedTokens: number
  byRoute: Record<string, { steps: number, promptTokens: number, completionTokens: number, cachedTokens: number }>
}

export const USAGE_PROJECTION = 'operator/usage'

function addUsage(state: UsageTotals, data: any): UsageTotals {
  const prompt = Number(data?.promptTokens) || 0
  const completion = Number(data?.completionTokens) || 0
  const cached = Math.min(prompt, Math.max(0, Number(data?.cachedTokens) || 0))
  const route = typeof data?.route === 'string' ? data.route : 'unknown'
  const before = state.byRoute[route] ?? { steps: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0 }
  return {
    steps: state.steps + 1,
    promptTokens: state.promptTokens + prompt,
    completionTokens: state.completionTokens + completion,
    cachedTokens: state.cachedTokens + cached,
    byRoute: {
      ...state.byRoute,
      [route]: { steps: before.steps + 1, promptTokens: before.promptTokens + prompt, completionTokens: before.completionTokens + completion, cachedTokens: before.cachedTokens + cached },
    },
  }
}

/** `TASKWARD_DATA` or `./data`: the same rule as plugin-database's `dataDirectory()`. */
export function defaultWorkspaceRoot(env: NodeJS.ProcessEnv = process.env) {
  return resolve(env.TASKWARD_DATA || 'data', 'workspaces')
}

/**
 * The operator's controls (service `operator`): create a session with its main agent inside the
 * workspace roots, send it input (chat turns are queued, slash commands answered), cancel, and list
 * or remove queued turns. The HTTP routes (operator-routes.ts) are thin wrappers over these.
 */
export class Operator extends Service {
  static inject = ['sessions', 'agents', 'commands', 'models', 'connection', 'projections']
  static Config: Schema<Partial<Operator.Config>, Operator.Config> = Schema.object({
    workspaceRoots: Schema.array(Schema.string()).default([])
      .description('Directories sessions may be created in (with everything below them); empty: <data directory>/workspaces. Created at start.'),
    defaultModel: Schema.string().default('scripted').description('Model route of sessions created without one.'),
  })

  /** Real paths of the workspace roots, once created. */
  roots: string[] = []
  private ready: Promise<string[]>
  private readonly home: Context

  constructor(ctx: Context, public override config: Operator.Config = { workspaceRoots: [], defaultModel: 'scripted' }) {
    super(ctx, 'operator', true)
    this.home = ctx
    const wanted = config.workspaceRoots.length ? config.workspaceRoots.map((root) => resolve(root)) : [defaultWorkspaceRoot()]
    this.ready = prepareRoots(wanted).then((roots) => this.roots = roots)
    // Not fatal at start: a root that cannot be created refuses session creation with its error.
    this.ready.catch((error) => ctx.logger('operator').warn('workspace roots: %s', error))
    ctx.projections.register<UsageTotals>({
      key: USAGE_PROJECTION,
      // v2: cachedTokens (a stored v1 state is folded again from the log).
      version: 2,
      init: () => ({ steps: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, byRoute: {} }),
      apply: (state, event) => event.type === 'model/usage' ? addUsage(state, event.data) : state,
    })
    registerOperatorRoutes(ctx, this)
  }

  /** Prompt and completion tokens the session's model steps reported, in total and per route. */
  usage(session: Session): Promise<UsageTotals> {
    return this.home.projections.get<UsageTotals>(session, USAGE_PROJECTION)
  }

  async workspaceRoots() {
    return await this.ready
  }

  /** A new main session in `cwd` (inside a workspace root) with its agent on `model`. */
  async createSession(options: { cwd: string, model?: string, create?: boolean }): Promise<Agent> {
    const model = options.model ?? this.config.defaultModel
    this.home.models.get(model)
    const cwd = await resolveWorkspaceDirectory(await this.workspaceRoots(), options.cwd, options.create)
    return this.home.agents.create({ cwd, model, role: 'main' })
  }

  /** The session's live agent, resumed (admission's `agent/before-resume` applies) when not in memory. */
  async agentOf(session: Session): Promise<Agent> {
    return this.home.agents.get(session.id) ?? await this.home.agents.resume(session.id)
  }

  /**
   * Chat text becomes a queued turn (recorded as `user/message` when it starts); text starting with
   * `/` runs the command now and returns its reply. The agent is resumed first when it is not live;
   * a refused resume refuses chat, while commands still run (they may be how the user fixes things).
   */
  async input(session: Session, text: string): Promise<InputOutcome> {
    if (!text.trim()) throw new TaskwardError('BAD_REQUEST', 'text: a message needs some text.')
    if (text.startsWith('/')) {
      if (session.model) await this.agentOf(session).catch(() => undefined)
      const reply = await this.home.commands.input(session, text)
      return { kind: 'command', reply: reply! }
    }
    const agent = await this.agentOf(session)
    const running = agent.state !== 'idle'
    const id = agent.followup(text, { origin: 'user' })
    const position = agent.queuedTurns().findIndex((item) => item.id === id)
    return { kind: 'queued', id, position, running, held: agent.held }
  }

  /** Stop the running turn and drop every queued one; records who did it. */
  async cancel(session: Session) {
    const agent = this.home.agents.get(session.id)
    const dropped = agent?.queuedTurns() ?? []
    const running = !!agent && agent.state === 'running'
    agent?.cancel()
    if (running || dropped.length) {
      // Committed at once, not staged with the running step: the operator is answered only once it is written.
      await session.append('agent/cancelled', { by: 'operator', running, dropped: dropped.length }, { commit: true }).catch((error) => {
        // The stop itself cannot be taken back: say that it happened, and that only its record is missing.
        if (!TaskwardError.is(error, 'LEASE_LOST')) throw error
        throw new TaskwardError('LEASE_LOST',
          `This host stopped its turn of session ${session.id}${dropped.length ? ` and dropped ${dropped.length} queued turn(s)` : ''}, `
          + 'but another host holds the session\'s lease, so the cancel was not recorded. Cancel again on the host that holds it.',
          { ...error.details, stopped: running, dropped: dropped.length })
      })
    }
    return { running, dropped }
  }

  queue(session: Session): { state: string, held: boolean, items: QueuedTurn[] } {
    const agent = this.home.agents.get(session.id)
    return { state: agent?.state ?? 'stopped', held: agent?.held ?? false, items: agent?.queuedTurns() ?? [] }
  }

  removeQueued(session: Session, id: string): QueuedTurn {
    const removed = this.home.agents.get(session.id)?.removeQueued(id)
    if (!removed) throw new TaskwardError('NOT_FOUND', `No queued turn ${id} in session ${session.id}; it may have started already (GET the queue again).`)
    return removed
  }
}

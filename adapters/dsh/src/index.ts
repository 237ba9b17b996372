import type { Context } from 'cordis'
import Schema from 'schemastery'
import { provideService } from '@taskward/cordis-compat'
import { strictConfig } from '@taskward/protocol'
import { AdmissionService } from '@taskward/plugin-admission'
import { Recovery } from '@taskward/plugin-recovery'
import { ConsoleRoutes } from '@taskward/plugin-console/web-console'
import { RepairService } from '@taskward/plugin-repair'
import { Supervisor } from '@taskward/plugin-supervisor'
import { WorkspaceService } from '@taskward/plugin-workspace'
import { DshAgentsContract } from './agents'
import { DshCommandsContract } from './commands'
import { DshConnectionContract } from './connection'
import type { DshAgent, DshAgents, DshCommands, DshEvent, DshSession, DshSessions, DshTools, DshWebServer } from './dsh-types'
import { emitPrivate, privateEvents } from './events'
import { DshModelsContract } from './models'
import { DshProjectionsContract } from './projections'
import { DshSessionsContract } from './sessions'
import { DshToolsContract, refusalText, type DshToolExecution } from './tools'
import { guardSupervisedSessions, sessionPreset, SUPERVISION_PRESET } from './supervision-preset'
import { dropLeftoverCarriers, readCarried, withoutCarriers } from './carrier'
import { ConsultCommand } from './consultations'
import { STORE_DEADLINE_MS } from './deadline'
import { isTaskwardReviewer, restrictReviewerTools } from './reviewer-tools'

export { CARRIER_KIND, readCarried, writeCarried } from './carrier'
export { viewEvent, DSH_TYPE_PREFIX } from './session-view'

/** The row name DSH loads (the bundle's cordis.patch.yml inserts `{id: taskward, name: '@taskward/dsh'}`). */
export const name = 'taskward'
export const inject = ['sessions', 'agents', 'tools', 'commands', 'webServer']

export interface Config {
  prefix: string
  operatorToken: string
  supervisor: Record<string, unknown>
  workspace: Record<string, unknown>
  recovery: Record<string, unknown>
  storeDeadlineMs: number
  trustedHosts: string[]
}

// Strict (unknown keys and bad values are CONFIG_INVALID naming the key): a misspelt key in a patch
// layer would otherwise be dropped silently — `operatortoken` would run on a random token.
export const Config: Schema<Partial<Config>, Config> = strictConfig('taskward', Schema.object({
  prefix: Schema.string().pattern(/^\/[a-z][a-z0-9-]*$/).default('/taskward')
    .description('Path prefix of Taskward\'s routes on DSH\'s web server (no trailing slash).'),
  operatorToken: Schema.string().role('secret').default('').description('Operator token (empty: a random one at each start).'),
  supervisor: Schema.dict(Schema.any()).default({}).description('The supervisor plugin\'s config.'),
  workspace: Schema.dict(Schema.any()).default({}).description('The workspace plugin\'s config (repairMaxFiles, repairMaxBytes).'),
  recovery: Schema.dict(Schema.any()).default({}).description('The recovery plugin\'s config (checks, budgets, sandbox; docs/recovery.md).'),
  storeDeadlineMs: Schema.natural().min(1).max(2_147_483_647).default(STORE_DEADLINE_MS)
    .description('How long Taskward waits for DSH\'s flush or a session resume before answering STORE_UNAVAILABLE (ms).'),
  trustedHosts: Schema.array(Schema.string().pattern(/^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:]+\](:\d{1,5})?$/i)).default([])
    .description('Non-loopback host[:port] names DSH is served under (as DSH\'s own --trusted-host): the panel in DSH\'s page logs in from those too.'),
})) as Schema<Partial<Config>, Config>

/** The service names of Taskward's host contract; DSH has services of the same names (other shapes). */
const CONTRACT = ['sessions', 'agents', 'tools', 'commands', 'projections', 'models', 'connection'] as const

interface Dsh {
  sessions: DshSessions
  agents: DshAgents
  tools: DshTools
  commands: DshCommands
  webServer: DshWebServer & { port?: number, address?: () => { port: number } }
}

/**
 * Taskward inside DSH (rc.8). Loaded by DSH as the bundle's row; it
 *  1. creates a child context that isolates the contract's service names, so DSH's `sessions`,
 *     `agents`, `tools` and `commands` stay what they are for every other DSH plugin;
 *  2. provides there Taskward's host contract (docs/host.md) implemented over DSH's services;
 *  3. loads the plugins — the same code our own host runs — into that child.
 */
export function apply(ctx: Context, input: Partial<Config>) {
  const config = Config(input)
  const c = ctx as any
  const dsh: Dsh = { sessions: c.sessions, agents: c.agents, tools: c.tools, commands: c.commands, webServer: c.webServer }
  const label = Symbol('taskward')
  let child: Context = ctx
  for (const service of CONTRACT) child = (child as any).isolate(service, service === 'sessions' ? label : undefined)
  privateEvents(ctx, label)

  // DSH's cold-session services are optional plugins: read each time they are needed.
  const sessions = new DshSessionsContract(child, dsh, 'dsh', () => ({ agents: dsh.agents, persistence: c.get('sessionPersistence'), presets: c.get('agentPresets') }),
    { deadlineMs: config.storeDeadlineMs })
  const tools = new DshToolsContract(child, dsh.tools, sessions)
  const agents = new DshAgentsContract(child, dsh.agents, sessions, (agent, role) => role === 'reviewer' ? tools.offerReviewerTools(agent) : tools.offerConsultationTools(agent))
  guardSupervisedSessions(ctx, sessions)
  const connection = new DshConnectionContract(child, dsh.webServer, config.prefix, config.operatorToken, () => listeningPort(dsh.webServer), config.trustedHosts)

  // DSH's events, heard on the entry context (outside the subtree), feed the contract.
  c.on('session/event', (session: DshSession, event: DshEvent) => sessions.dispatch(session, event))
  c.on('tools/pre-execute', async (exec: DshToolExecution, next: () => Promise<unknown>) => {
    // The turn's tool calls, for its `agent/turn-end` summary (the controller continues only after a
    // turn that called tools).
    if (exec.agent) agents.view(exec.agent).turn.toolCalls.push(exec.name)
    const denial = await tools.denial(exec)
    if (denial) return { kind: 'deny', reason: refusalText(denial) }
    return next()
  })
  // Every dispatch passes here. A call that a `tools/pre-execute` listener ahead of ours answered
  // without asking on (a hook's `allow` or an approved `ask`) is admitted now; then, synchronously before
  // DSH resolves the body it runs, only the definition admission checked may run.
  c.on('tools/execute', async (exec: DshToolExecution, next: () => Promise<unknown>) => {
    if (!tools.admitted(exec)) {
      const denial = await tools.denial(exec)
      if (denial) throw new Error(refusalText(denial))
    }
    const refusal = tools.dispatchRefusal(exec)
    if (refusal) throw new Error(refusalText(refusal))
    return next()
  })
  c.on('agent/pre-step', async (payload: { agent: DshAgent, step: number }, next: () => Promise<unknown>) => {
    const view = agents.view(payload.agent)
    view.turn.steps++
    const refusal = await agents.refusal(view, payload.step)
    // A carrier a crash left queued is claimed like any message: it never goes to the model (carrier.ts).
    if (!refusal) return withoutCarriers(await next())
    view.turn.refused = { code: refusal.code, message: refusal.message }
    // The refusal's code in the log (a DSH rejection carries none), as on our host.
    view.session.append('agent/refused', { code: refusal.code, message: refusal.message }).catch(() => {})
    return { kind: 'reject' }
  })
  // The main agent's tools go only to sessions Taskward supervises (tools.ts offerTaskTools).
  sessions.onRecord = (session) => {
    const agent = dsh.agents.get(session.id) as DshAgent | undefined
    if (agent && sessions.view(session).role === 'main') tools.offerTaskTools(agent)
  }
  c.on('agent/created', ({ agent }: { agent: DshAgent }) => {
    // Carriers a crash left queued (inserts kept, removal lost) leave the inbox before anything runs.
    dropLeftoverCarriers(agent)
    const role = sessions.view(agent.session).role
    if (role === 'main' && isSupervised(agent.session)) tools.offerTaskTools(agent)
    // A consultation (its marker read back after a restart, consultations.ts) gets its tools again.
    if (role === 'consultation') tools.offerConsultationTools(agent)
    // A reviewer session DSH brings back (a person opens an old one after a restart) mounts a whole
    // preset: held to read/glob/grep as when Taskward created it (those it creates, agents.ts create).
    // Only Taskward's reviewers: a user's fork of a session has a parent too.
    if (role === 'reviewer' && !sessions.reviewers.has(agent.session.id) && isTaskwardReviewer(agent.session)) {
      try {
        restrictReviewerTools(dsh.tools, agent)
      } catch (error) {
        // The supervisor's guard still refuses everything but reading (FORBIDDEN).
        ctx.logger('taskward').warn(`reviewer session ${agent.session.id} could not be held to read-only tools:`, error)
      }
    }
    emitPrivate(child, 'agent/created', agents.view(agent))
  })
  c.on('agent/error', ({ agent, error }: { agent: DshAgent, error: unknown }) => {
    agents.view(agent).turn.error = { code: 'MODEL_FAILED', message: String((error as Error)?.message ?? error) }
  })
  c.on('agent/status', ({ agent, status }: { agent: DshAgent, status: string }) => {
    const view = agents.view(agent)
    if (status === 'running') { view.turn = { steps: 0, toolCalls: [] }; return }
    const summary = { input: { id: '', message: '', meta: {}, queuedAt: 0 }, ...view.turn }
    emitPrivate(child, 'agent/turn-end', view, summary)
  })

  ;(child as any).plugin({
    name: 'taskward-host-contract',
    apply(host: Context) {
      provideService(host, 'sessions', sessions)
      provideService(host, 'agents', agents)
      provideService(host, 'tools', tools)
      provideService(host, 'projections', new DshProjectionsContract(host))
      provideService(host, 'commands', new DshCommandsContract(host, dsh.commands, sessions))
      provideService(host, 'models', new DshModelsContract())
      provideService(host, 'connection', connection)
    },
  })
  ;(ctx as any).effect(() => connection.mount())
  // The panel (client.js, adapters/dsh/client) finds Taskward's routes through this tag on DSH's page.
  if (dsh.webServer.tapIndex) (ctx as any).effect(() => dsh.webServer.tapIndex!(panelBaseTag(config.prefix)))
  connection.register({
    path: '/health',
    methods: ['GET'],
    access: 'public',
    handler: () => Response.json({ ok: true, taskward: true, host: 'dsh', prefix: config.prefix }),
  })

  ;(child as any).plugin(WorkspaceService, config.workspace)
  ;(child as any).plugin(AdmissionService, {})
  ;(child as any).plugin(Supervisor, { reviewerModel: 'dsh', defaultModel: 'dsh', ...config.supervisor })
  ;(child as any).plugin(RepairService, {})
  ;(child as any).plugin(Recovery, config.recovery)
  ;(child as any).plugin(ConsoleRoutes, {})
  ;(child as any).plugin(ConsultCommand)
}

/**
 * Whether Taskward supervises a session DSH opens: it selected the supervision preset in it, or (a DSH
 * without a preset roster) its log carries Taskward records written for it. Read once per agent DSH
 * creates (`session.events` copies the log).
 */
function isSupervised(session: DshSession) {
  if (sessionPreset(session) === SUPERVISION_PRESET) return true
  return session.events.some((event) => readCarried(event, session.id) !== undefined)
}

/** Adds `<meta name="taskward-base" content="<prefix>">` to DSH's index page (the prefix is a checked path). */
export function panelBaseTag(prefix: string) {
  return (html: string) => html.includes('name="taskward-base"') ? html : html.replace('</head>', `<meta name="taskward-base" content="${prefix}"></head>`)
}

function listeningPort(web: Dsh['webServer']): number | undefined {
  const server = (web as any).server ?? (web as any).httpServer
  const address = server?.address?.()
  if (address && typeof address === 'object') return address.port
  return (web as any).port ?? (web as any).config?.port
}

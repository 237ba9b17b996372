import type { Context } from 'cordis'
import { catchUpWithStore, type Session } from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import {
  evidenceSeqsOf, NODE_STATUS_WORDS, PHASE_LABELS, recoveryView, REFUSAL_ADVICE, sessionView,
  type Budgets, type CheckSpec, type RecoveryView, type SessionEvent, type SessionSummary, type TaskRecovery,
} from '@taskward/protocol'

/** How many main sessions the list shows (newest first). */
export const SESSION_LIST_LIMIT = 200

function summary(session: Session): SessionSummary {
  return { id: session.id, cwd: session.cwd, role: session.role, createdAt: session.createdAt, seq: session.seq }
}

/** What the console reads of the recovery controller (optional: recovery is opt-in per host config). */
interface RecoveryReader {
  state(session: Session): Promise<{ tasks: Record<string, TaskRecovery | undefined> }>
  config: { budgets: Budgets }
  checksFor(state: unknown, taskId: string): CheckSpec[]
}

/** The checks that will verify a task, and where they come from; `loaded: false` without recovery. */
export interface ChecksView {
  loaded: boolean
  taskId?: string
  source?: 'task' | 'config'
  checks?: CheckSpec[]
  /** Checks, last verdict and budgets used/left (protocol's recoveryView). */
  recovery?: RecoveryView
}

export async function readChecks(ctx: Context, session: Session, taskId: string | undefined): Promise<ChecksView> {
  const recovery = ctx.get('recovery') as RecoveryReader | undefined
  if (!recovery) return { loaded: false }
  if (!taskId) return { loaded: true }
  const state = await recovery.state(session)
  const checks = recovery.checksFor(state, taskId)
  return {
    loaded: true, taskId, source: state.tasks[taskId]?.checks ? 'task' : 'config', checks,
    recovery: recoveryView(state.tasks[taskId], checks, recovery.config.budgets),
  }
}

/** The task view of one session, with its evidence quotes read from the log. */
export async function readSessionView(ctx: Context, sessionId: string) {
  const session = await ctx.sessions.get(sessionId)
  // Other hosts sharing the store may have appended (e.g. the reopen of a repair confirmed there).
  await catchUpWithStore(ctx, session)
  const status = await ctx.supervisor.status(session)
  const state = await ctx.supervisor.state(session)
  const events = new Map<number, SessionEvent>()
  for (const seq of evidenceSeqsOf(state)) {
    const event = await session.event(seq)
    if (event) events.set(seq, event)
  }
  const checks = await readChecks(ctx, session, state.current?.id)
  return { ...sessionView(summary(session), state, events, status.controller), controller: status.controller, checks, advice: REFUSAL_ADVICE, statusLabels: NODE_STATUS_WORDS }
}

/** Main sessions, newest first, each with its current task in one line. */
export async function readSessionList(ctx: Context) {
  const sessions = (await ctx.sessions.list()).filter((s) => s.role === 'main').reverse().slice(0, SESSION_LIST_LIMIT)
  return Promise.all(sessions.map(async (session) => {
    await catchUpWithStore(ctx, session)
    const state = await ctx.supervisor.state(session)
    const task = state.current
    const waiting = state.proposals.findLast((p) => p.status === 'pending' || p.status === 'confirmed')
    return {
      ...summary(session),
      ...(task ? { task: { id: task.id, objective: task.objective, phase: task.phase, phaseLabel: PHASE_LABELS[task.phase], acceptanceCycle: task.acceptanceCycle ?? 1 } } : {}),
      ...(waiting ? { awaitingDecision: { id: waiting.proposal.id, title: waiting.proposal.title } } : {}),
      historyCount: state.history.length,
      ...(state.poisoned ? { poisoned: true } : {}),
    }
  }))
}

export function registerApi(ctx: Context) {
  ctx.connection.register({
    path: '/api/console/sessions',
    methods: ['GET'],
    access: 'operator',
    handler: async () => Response.json({ sessions: await readSessionList(ctx) }),
  })
  ctx.connection.register({
    path: '/api/console/sessions/:sessionId/view',
    methods: ['GET'],
    access: 'operator',
    handler: async (_request, { params }) => Response.json(await readSessionView(ctx, params.sessionId), {
      headers: { 'cache-control': 'no-store' },
    }),
  })
}

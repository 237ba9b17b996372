import type { Context } from 'cordis'
import { mainSessionOf, original, type Agent, type Session } from '@taskward/host'
import {
  pause, RECORD_EVENT_TYPE, TASK_NAMESPACE, TASK_STATE_KIND, TaskwardError, type SessionEvent, type SupervisorState,
} from '@taskward/protocol'

/*
 * `maxTokensPerTask`: the tokens a supervised task used (its main session's and its reviewers'
 * `model/usage` events since the task's first record) against a budget. Past it, every step of the
 * task's agents is refused with TOKEN_BUDGET_EXHAUSTED and the task pauses (a main-agent step pauses
 * it through the supervisor, reason `budget`; a refused reviewer ends in a review fault, which pauses it
 * too). `/task resume` is refused with the same code while the budget is still used up. Nothing is
 * lost: the log and the task stay; raising the budget and `/task resume` continue it.
 */

export interface TaskTokens {
  /** The task whose tokens `tokens` counts (the last task record seen). */
  taskId?: string
  tokens: number
}

/**
 * What one `model/usage` counts: its prompt and completion tokens, a prompt token the endpoint served
 * from its cache weighted `cachedWeight` (it is billed and served for a fraction of the price).
 */
export function usageTokens(data: any, cachedWeight = 1): number {
  const prompt = Number(data?.promptTokens) || 0
  const cached = Math.min(prompt, Math.max(0, Number(data?.cachedTokens) || 0))
  return prompt - cached + cached * cachedWeight + (Number(data?.completionTokens) || 0)
}

/** Fold events onto a running count: a record of another task restarts it. Pure. */
export function taskTokens(acc: TaskTokens, events: Iterable<SessionEvent>, cachedWeight = 1): TaskTokens {
  let { taskId, tokens } = acc
  for (const event of events) {
    if (event.type === 'model/usage') {
      tokens += usageTokens(event.data, cachedWeight)
    } else if (event.type === RECORD_EVENT_TYPE && event.data?.namespace === TASK_NAMESPACE && event.data?.kind === TASK_STATE_KIND) {
      const id = event.data?.payload?.id
      if (typeof id === 'string' && id !== taskId) {
        taskId = id
        tokens = 0
      }
    }
  }
  return { taskId, tokens }
}

const LIVE_PHASES = ['planning', 'awaiting-approval', 'active', 'reviewing']

export function registerTokenBudget(ctx: Context, budget: number, cachedWeight = 1) {
  // Running counts per session (main: TaskTokens; reviewer: tokens only), kept current by following
  // the appends: a step reads the log only for events the count has not seen (the first step of a
  // session in this process, or events another process appended).
  const counts = new Map<string, TaskTokens & { next: number }>()
  const sessions = original(ctx.sessions)
  const fold = (count: TaskTokens, events: Iterable<SessionEvent>, main: boolean) =>
    main ? taskTokens(count, events, cachedWeight) : { tokens: taskTokens({ tokens: count.tokens }, events, cachedWeight).tokens }
  ctx.sessions.observe((session, event) => {
    const count = counts.get(session.id)
    if (!count || event.seq !== count.next) return
    counts.set(session.id, { ...fold(count, [event], session.role === 'main'), next: event.seq + 1 })
  })
  // A refused step's events are not in the log: a count that followed them is counted again from it.
  ctx.sessions.observeRollback((session, fromSeq) => {
    const count = counts.get(session.id)
    if (count && count.next > fromSeq) counts.delete(session.id)
  })

  async function counted(session: Session, main: boolean) {
    let known = counts.get(session.id) ?? { next: 0, tokens: 0 }
    if (known.next === session.seq) return known
    // Past the log's end: it counted a step whose commit was refused. Count again from the start.
    if (known.next > session.seq) known = { next: 0, tokens: 0 }
    const events: SessionEvent[] = []
    for await (const event of session.events(known.next)) events.push(event)
    const count = { ...fold(known, events, main), next: events.at(-1) ? events.at(-1)!.seq + 1 : known.next }
    counts.set(session.id, count)
    return count
  }

  async function used(main: Session, state: SupervisorState, taskId: string) {
    const folded = await counted(main, true)
    let total = folded.taskId === taskId ? folded.tokens : 0
    for (const job of state.reviews) {
      if (job.taskId !== taskId) continue
      const reviewer = await sessions.get(job.reviewerSessionId).catch(() => undefined)
      if (!reviewer) continue
      total += (await counted(reviewer, false)).tokens
    }
    return total
  }

  // Cached prompt tokens count at a fraction (cachedTokenWeight): totals may be fractional.
  const exhausted = (taskId: string, used: number, state: string, tokens = Math.round(used)) => new TaskwardError('TOKEN_BUDGET_EXHAUSTED',
    `Task ${taskId} used ${tokens} tokens, its budget is ${budget} (openai maxTokensPerTask); ${state}. `
    + `Raise maxTokensPerTask in the openai configuration (cordis.yml) above ${tokens} and restart the host, then /task resume.`,
    { taskId, tokens, budget, key: 'maxTokensPerTask' })

  ctx.inject(['supervisor', 'agents'], (ctx) => {
    const supervisor = (ctx as any).supervisor
    // For the guard's calls on every step, the service itself (this fork restarts when it changes);
    // registering still goes through the traced view.
    const states = original(supervisor) as { state(session: Session): Promise<SupervisorState> }
    // A step guard, called directly by every turn (an `agent/before-step` listener costs an event dispatch per step).
    ctx.agents.stepGuard(async (agent: Agent) => {
      const session = agent.session
      // The first main session up the parents: a consultation's sub-agent works for the main task too.
      const main = await mainSessionOf(sessions, session)
      if (!main) return
      const state: SupervisorState = await states.state(main)
      const task = state.current
      // A task paused on its budget stays refused: chat to it would spend the tokens the budget stopped.
      const paused = task?.phase === 'paused'
      if (!task || !task.enabled || !(paused || LIVE_PHASES.includes(task.phase))) return
      const tokens = await used(main, state, task.id)
      if (tokens < budget) return
      if (paused) return exhausted(task.id, tokens, 'the task stays paused and nothing is lost')
      if (session.role === 'main') {
        await supervisor.apply(main, (current: any, at: any) => current && LIVE_PHASES.includes(current.phase) ? pause(current, { reason: 'budget' }, at) : current)
          .catch((error: unknown) => ctx.logger('openai').warn('task %s: pausing after the token budget failed: %s', task.id, error))
      }
      return exhausted(task.id, tokens, 'the task is paused and nothing is lost')
    })
    // Resuming a task whose tokens are still past the budget would only be refused at its first step.
    supervisor.registerResumeGuard(async (session: Session, task: { id: string, phase: string }) => {
      if (session.role !== 'main') return
      const tokens = await used(session, await supervisor.state(session), task.id)
      if (tokens < budget) return
      return exhausted(task.id, tokens, task.phase === 'paused' ? 'the task stays paused and nothing is lost' : 'nothing was queued and nothing is lost')
    })
  })
}

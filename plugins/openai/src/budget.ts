import type { Context } from 'cordis'
import { original, type Agent, type Session } from '@taskward/host'
import {
  pause, RECORD_EVENT_TYPE, TASK_NAMESPACE, TASK_STATE_KIND, TaskwardError, type SessionEvent, type SupervisorState,
} from '@taskward/protocol'

/*
 * `maxTokensPerTask`: the tokens a supervised task used (its main session's and its reviewers'
 * `model/usage` events since the task's first record) against a budget. Past it, every step of the
 * task's agents is refused with TOKEN_BUDGET_EXHAUSTED and the task pauses (a main-agent step pauses
 * it through the supervisor; a refused reviewer ends in a review fault, which pauses it too).
 * Nothing is lost: the log and the task stay; raising the budget and `/task resume` continue it.
 */

export interface TaskTokens {
  /** The task whose tokens `tokens` counts (the last task record seen). */
  taskId?: string
  tokens: number
}

/** Fold events onto a running count: a record of another task restarts it. Pure. */
export function taskTokens(acc: TaskTokens, events: Iterable<SessionEvent>): TaskTokens {
  let { taskId, tokens } = acc
  for (const event of events) {
    if (event.type === 'model/usage') {
      tokens += (Number(event.data?.promptTokens) || 0) + (Number(event.data?.completionTokens) || 0)
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

export function registerTokenBudget(ctx: Context, budget: number) {
  // Running counts per session (main: TaskTokens; reviewer: tokens only), kept current by following
  // the appends: a step reads the log only for events the count has not seen (the first step of a
  // session in this process, or events another process appended).
  const counts = new Map<string, TaskTokens & { next: number }>()
  const sessions = original(ctx.sessions)
  const fold = (count: TaskTokens, events: Iterable<SessionEvent>, main: boolean) =>
    main ? taskTokens(count, events) : { tokens: taskTokens({ tokens: count.tokens }, events).tokens }
  ctx.sessions.observe((session, event) => {
    const count = counts.get(session.id)
    if (!count || event.seq !== count.next) return
    counts.set(session.id, { ...fold(count, [event], session.role === 'main'), next: event.seq + 1 })
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

  ctx.inject(['supervisor', 'agents'], (ctx) => {
    const supervisor = (ctx as any).supervisor
    // A step guard, called directly by every turn (an `agent/before-step` listener costs an event dispatch per step).
    ctx.agents.stepGuard(async (agent: Agent) => {
      const session = agent.session
      const main = session.role === 'main' ? session
        : session.parentId ? await ctx.sessions.get(session.parentId).catch(() => undefined) : undefined
      if (!main || main.role !== 'main') return
      const state: SupervisorState = await supervisor.state(main)
      const task = state.current
      if (!task || !task.enabled || !LIVE_PHASES.includes(task.phase)) return
      const tokens = await used(main, state, task.id)
      if (tokens < budget) return
      if (session.role === 'main') {
        await supervisor.apply(main, (current: any, at: any) => current && LIVE_PHASES.includes(current.phase) ? pause(current, { reason: 'user' }, at) : current)
          .catch((error: unknown) => ctx.logger('openai').warn('task %s: pausing after the token budget failed: %s', task.id, error))
      }
      return new TaskwardError('TOKEN_BUDGET_EXHAUSTED',
        `Task ${task.id} used ${tokens} tokens, its budget is ${budget} (maxTokensPerTask); the task is paused and nothing is lost. `
        + 'Raise maxTokensPerTask, then /task resume.',
        { taskId: task.id, tokens, budget })
    })
  })
}

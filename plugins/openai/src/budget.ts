import type { Context } from 'cordis'
import type { Agent, Session } from '@taskward/host'
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
  // Incremental counts, so that a step reads only the events written since the last one.
  const mains = new Map<string, TaskTokens & { next: number }>()
  const reviewers = new Map<string, { next: number, tokens: number }>()

  async function read(session: Session, from: number) {
    const events: SessionEvent[] = []
    for await (const event of session.events(from)) events.push(event)
    return events
  }

  async function used(main: Session, state: SupervisorState, taskId: string) {
    const known = mains.get(main.id) ?? { next: 0, tokens: 0 }
    const events = await read(main, known.next)
    const folded = taskTokens(known, events, cachedWeight)
    mains.set(main.id, { ...folded, next: events.at(-1) ? events.at(-1)!.seq + 1 : known.next })
    let total = folded.taskId === taskId ? folded.tokens : 0
    for (const job of state.reviews) {
      if (job.taskId !== taskId) continue
      const reviewer = await ctx.sessions.get(job.reviewerSessionId).catch(() => undefined)
      if (!reviewer) continue
      const seen = reviewers.get(reviewer.id) ?? { next: 0, tokens: 0 }
      const more = await read(reviewer, seen.next)
      const tokens = taskTokens({ tokens: seen.tokens }, more, cachedWeight).tokens
      reviewers.set(reviewer.id, { next: more.at(-1) ? more.at(-1)!.seq + 1 : seen.next, tokens })
      total += tokens
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

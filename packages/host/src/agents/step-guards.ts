import type { Context } from 'cordis'
import { TaskwardError, asTaskwardError } from '@taskward/protocol'
import type { Agent } from './agent'

/**
 * Asked before every model step of every agent: return (or throw) a `TaskwardError` to refuse the step,
 * nothing to let it run. Answer synchronously when you can — a turn then pays a direct call, not a
 * promise — and return a promise only when the answer needs I/O.
 */
export type StepGuard = (agent: Agent) => TaskwardError | undefined | void | Promise<TaskwardError | undefined | void>

type Answer = TaskwardError | undefined

const BEFORE_STEP = 'agent/before-step'
/** DSH's published name of the same waterfall; a documented alias, asked after `agent/before-step`. */
const PRE_STEP = 'agent/pre-step'

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function'
}

/**
 * The step guards of the `agents` service, called directly in registration order before every step;
 * then, for compatibility, the `agent/before-step` listeners — dispatched through Cordis only when
 * someone listens, since a dispatch costs far more than the guards themselves. The first refusal wins.
 * A plain object on purpose: agents reach it without Cordis' tracing proxies.
 */
export class StepGuards {
  private readonly guards: StepGuard[] = []
  /** Cordis' listener table (one object for the life of the app), read once: the context getter is slow. */
  private hooks?: Record<keyof any, unknown[] | undefined>

  constructor(private readonly home: Context) {}

  /** Add a guard for the life of `ctx` (the registering plugin). Returns the disposer. */
  add(ctx: Context, guard: StepGuard): () => void {
    const guards = this.guards
    return ctx.effect(() => {
      guards.push(guard)
      return () => {
        const at = guards.indexOf(guard)
        if (at >= 0) guards.splice(at, 1)
      }
    })
  }

  /** The first refusal for `agent`'s next step, or undefined; synchronous unless a guard or listener is not. */
  ask(agent: Agent): Answer | Promise<Answer> {
    return this.askFrom(agent, 0)
  }

  private askFrom(agent: Agent, from: number): Answer | Promise<Answer> {
    const guards = this.guards
    for (let i = from; i < guards.length; i++) {
      let answer: unknown
      try {
        answer = guards[i](agent)
      } catch (error) {
        return asTaskwardError(error)
      }
      if (isThenable(answer)) {
        return Promise.resolve(answer).then(
          (settled) => settled ? asTaskwardError(settled) : this.askFrom(agent, i + 1),
          (error) => asTaskwardError(error))
      }
      if (answer) return asTaskwardError(answer)
    }
    return this.hasListeners() ? this.askListeners(agent) : undefined
  }

  private hasListeners(): boolean {
    this.hooks ??= this.home.lifecycle._hooks
    return !!this.hooks[BEFORE_STEP]?.length || !!this.hooks[PRE_STEP]?.length
  }

  private async askListeners(agent: Agent): Promise<Answer> {
    try {
      for (const name of [BEFORE_STEP, PRE_STEP] as const) {
        if (!this.hooks![name]?.length) continue
        const answer = await this.home.serial(name, agent)
        if (answer) return asTaskwardError(answer)
      }
      return undefined
    } catch (error) {
      return asTaskwardError(error)
    }
  }
}

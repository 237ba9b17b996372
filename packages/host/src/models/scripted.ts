import type { Awaitable } from 'cosmokit'
import type { ModelAdapter, ModelRequest, ModelStep } from './types'

/** A scripted step: a fixed step, or a function of the request (to use seqs or results seen so far). */
export type ScriptStep = ModelStep | ((request: ModelRequest) => Awaitable<ModelStep>)

/**
 * The built-in deterministic model. Each role has a queue of steps; every model call takes the next
 * one. An empty queue answers with an empty step, which ends the turn without doing anything — so a
 * script that runs out can never invent work.
 */
export class ScriptedModel implements ModelAdapter {
  private queues = new Map<string, ScriptStep[]>()
  /** Every request served, for tests that count model calls. */
  readonly served: { role: string, sessionId: string, input: string, step: number }[] = []

  /** Append steps to a role's script. */
  script(role: string, steps: ScriptStep[]) {
    const queue = this.queues.get(role) ?? []
    queue.push(...steps)
    this.queues.set(role, queue)
    return this
  }

  /** Steps still queued for a role. */
  pending(role: string) {
    return this.queues.get(role)?.length ?? 0
  }

  reset(role?: string) {
    if (role) this.queues.delete(role)
    else this.queues.clear()
  }

  async step(request: ModelRequest): Promise<ModelStep> {
    this.served.push({ role: request.role, sessionId: request.session.id, input: request.input.text, step: request.step })
    const next = this.queues.get(request.role)?.shift()
    if (!next) return {}
    return typeof next === 'function' ? await next(request) : next
  }
}

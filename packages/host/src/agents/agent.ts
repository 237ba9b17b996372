import type { Context } from 'cordis'
import { EventTypes, TaskwardError, asTaskwardError } from '@taskward/protocol'
import type { Session } from '../sessions/session'
import type { ToolResult } from '../tools/types'
import { StepGuards } from './step-guards'

export type AgentState = 'idle' | 'running' | 'maintenance'

export interface Followup {
  message: string
  meta: Record<string, any>
}

/** Why a turn ended, for listeners of `agent/turn-end` (continuation, progress reviews). */
export interface TurnSummary {
  input: Followup
  steps: number
  toolCalls: string[]
  refused?: { code: string, message: string }
  error?: { code: string, message: string }
  cancelled?: boolean
}

export interface AgentOptions {
  maxStepsPerTurn: number
}

/**
 * One agent per session. Turns come from a queue (`followup`) and run one at a time; a maintenance
 * window (`runMaintenance`) runs exclusively between turns. An agent never starts work by itself:
 * after a restart its queue is empty until someone follows up.
 */
export class Agent {
  state: AgentState = 'idle'
  private queue: Followup[] = []
  private idleWaiters: (() => void)[] = []
  private maintenanceTail: Promise<unknown> = Promise.resolve()
  private maintenanceRequests = 0
  private turnDone?: Promise<void>
  private abort?: AbortController
  private disposed = false

  constructor(
    private ctx: Context,
    readonly session: Session,
    readonly model: string,
    readonly role: string,
    private options: AgentOptions,
    private stepGuards: StepGuards = new StepGuards(ctx),
  ) {}

  get id() {
    return this.session.id
  }

  /** Queued turns that have not started yet. */
  get queued() {
    return this.queue.length
  }

  /** Queue a turn. It starts when the agent is idle and no maintenance window is open or waiting. */
  followup(message: string, meta: Record<string, any> = {}) {
    if (this.disposed) throw new TaskwardError('SESSION_NOT_FOUND', `Agent ${this.id} was stopped; resume the session first.`)
    this.queue.push({ message, meta })
    queueMicrotask(() => this.drain())
  }

  /** Resolves when no turn runs, none is queued and no maintenance window is open. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /**
   * Run `fn` exclusively: wait for the running turn (queued turns wait instead), then hold the agent in
   * `maintenance` until `fn` settles. Windows run one after another.
   */
  runMaintenance<T>(fn: () => Promise<T> | T): Promise<T> {
    this.maintenanceRequests++
    const run = this.maintenanceTail.then(async () => {
      if (this.turnDone) await this.turnDone
      this.state = 'maintenance'
      this.ctx.emit('agent/state', this)
      try {
        return await fn()
      } finally {
        this.maintenanceRequests--
        this.state = 'idle'
        this.ctx.emit('agent/state', this)
        queueMicrotask(() => this.drain())
        this.notifyIdle()
      }
    })
    this.maintenanceTail = run.catch(() => {})
    return run
  }

  /** Drop queued turns and stop the running one after its current step. */
  cancel() {
    this.queue = []
    this.abort?.abort()
    this.notifyIdle()
  }

  dispose() {
    this.disposed = true
    this.cancel()
  }

  private isIdle() {
    return this.state === 'idle' && !this.queue.length && !this.maintenanceRequests
  }

  private notifyIdle() {
    if (!this.isIdle()) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    waiters.forEach((resolve) => resolve())
  }

  private async drain() {
    if (this.state !== 'idle' || this.maintenanceRequests || this.disposed) return
    const next = this.queue.shift()
    if (!next) return this.notifyIdle()
    this.state = 'running'
    this.ctx.emit('agent/state', this)
    let finish!: () => void
    this.turnDone = new Promise((resolve) => finish = resolve)
    let summary: TurnSummary
    try {
      summary = await this.runTurn(next)
    } finally {
      this.state = 'idle'
      this.turnDone = undefined
      finish()
      this.ctx.emit('agent/state', this)
    }
    this.ctx.emit('agent/turn-end', this, summary)
    queueMicrotask(() => this.drain())
    this.notifyIdle()
  }

  /**
   * Ask the step guards, then the `agent/before-step` listeners; the first coded refusal stops the turn.
   * Synchronous when every guard answers synchronously and nobody listens to the event (see StepGuards).
   */
  private refusal(): TaskwardError | undefined | Promise<TaskwardError | undefined> {
    return this.stepGuards.ask(this)
  }

  private async runTurn(input: Followup): Promise<TurnSummary> {
    const summary: TurnSummary = { input, steps: 0, toolCalls: [] }
    const abort = this.abort = new AbortController()
    try {
      if (!input.meta.recorded) {
        await this.session.append(EventTypes.userMessage, { text: input.message, origin: input.meta.origin ?? 'user' })
      }
      const adapter = this.ctx.models.get(this.model)
      let results: ToolResult[] = []
      for (let step = 0; step < this.options.maxStepsPerTurn; step++) {
        const refused = await this.refusal()
        if (refused) {
          summary.refused = { code: refused.code, message: refused.message }
          this.queue = []
          await this.session.append('agent/refused', summary.refused)
          break
        }
        if (abort.signal.aborted) {
          summary.cancelled = true
          break
        }
        const answer = await adapter.step({
          session: this.session, role: this.role, input: { text: input.message, meta: input.meta }, results, step,
          signal: abort.signal, onText: (delta) => this.ctx.emit('agent/text-delta', this, delta),
        })
        summary.steps++
        if (answer.text) await this.session.append(EventTypes.assistantMessage, { text: answer.text })
        if (answer.usage) {
          await this.session.append('model/usage', { route: this.model, step, promptTokens: answer.usage.promptTokens, completionTokens: answer.usage.completionTokens })
        }
        if (!answer.toolCalls?.length) break
        results = []
        for (const call of answer.toolCalls) {
          summary.toolCalls.push(call.name)
          results.push(await this.ctx.tools.execute(this.session, call.name, call.args ?? {}, { agentId: this.id, signal: abort.signal }))
        }
      }
    } catch (error) {
      const coded = asTaskwardError(error)
      summary.error = { code: coded.code, message: coded.message }
      await this.session.append('agent/error', summary.error).catch(() => {})
    } finally {
      if (this.abort === abort) this.abort = undefined
    }
    return summary
  }
}

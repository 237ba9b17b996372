import type { Context } from 'cordis'
import { randomUUID } from 'node:crypto'
import { EventTypes, TaskwardError, asTaskwardError } from '@taskward/protocol'
import type { Session } from '../sessions/session'
import type { ToolResult } from '../tools/types'
import { StepGuards } from './step-guards'
import type { Tools } from '../tools/service'
import { original } from '../original'
import { directEmitter, isHeard } from '../sessions/emit'

export type AgentState = 'idle' | 'running' | 'maintenance'

export interface Followup {
  /** Stable id of the queued turn (list and remove it by this id). */
  id: string
  message: string
  meta: Record<string, any>
  queuedAt: number
}

/** A turn waiting in an agent's queue, as listed to operators. */
export interface QueuedTurn {
  id: string
  text: string
  /** `user`, `controller`, ... (the followup's `meta.origin`). */
  origin: string
  queuedAt: number
}

declare module 'cordis' {
  interface Events {
    /** The agent's queue changed (a turn was queued, started, removed or dropped). */
    'agent/queue'(agent: Agent): void
  }
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
  /** While any hold is set, no queued turn starts (e.g. a review of the task is pending). */
  private holds = new Set<symbol>()

  constructor(
    private ctx: Context,
    readonly session: Session,
    readonly model: string,
    readonly role: string,
    private options: AgentOptions,
    private stepGuards: StepGuards = new StepGuards(ctx),
    /** The tool registry itself, not cordis' tracing view of it (`ctx.tools` costs ~0.1 ms a read). */
    private tools: Tools = original(ctx.tools),
    /** The model registry itself, for the same reason (each turn looks its adapter up). */
    private models: Context['models'] = original(ctx.models),
  ) {}

  get id() {
    return this.session.id
  }

  /** Queued turns that have not started yet. */
  get queued() {
    return this.queue.length
  }

  /**
   * Queue a turn; returns its queue id. It starts when the agent is idle, no maintenance window is open
   * or waiting and no hold is set.
   */
  followup(message: string, meta: Record<string, any> = {}): string {
    if (this.disposed) throw new TaskwardError('SESSION_NOT_FOUND', `Agent ${this.id} was stopped; resume the session first.`)
    const id = randomUUID()
    this.queue.push({ id, message, meta, queuedAt: Date.now() })
    this.queueChanged()
    queueMicrotask(() => this.drain())
    return id
  }

  /** The queued turns in the order they will run. */
  queuedTurns(): QueuedTurn[] {
    return this.queue.map((item) => ({ id: item.id, text: item.message, origin: String(item.meta.origin ?? 'user'), queuedAt: item.queuedAt }))
  }

  /** Remove a queued (not yet started) turn; returns it, or undefined when no queued turn has that id. */
  removeQueued(id: string): QueuedTurn | undefined {
    const index = this.queue.findIndex((item) => item.id === id)
    if (index < 0) return
    const [removed] = this.queuedTurns().splice(index, 1)
    this.queue.splice(index, 1)
    this.queueChanged()
    this.notifyIdle()
    return removed
  }

  /**
   * Keep queued turns from starting until the returned release is called (the running turn is not
   * affected). Used to hold operator input while a review of the task is pending.
   */
  hold(): () => void {
    const token = Symbol('hold')
    this.holds.add(token)
    return () => {
      if (!this.holds.delete(token)) return
      queueMicrotask(() => this.drain())
    }
  }

  /** Whether a hold keeps queued turns waiting. */
  get held() {
    return this.holds.size > 0
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
      this.announce('agent/state', this)
      try {
        return await fn()
      } finally {
        this.maintenanceRequests--
        this.state = 'idle'
        this.announce('agent/state', this)
        queueMicrotask(() => this.drain())
        this.notifyIdle()
      }
    })
    this.maintenanceTail = run.catch(() => {})
    return run
  }

  /** Drop queued turns and stop the running one after its current step. */
  cancel() {
    const dropped = this.queue.length
    this.queue = []
    if (dropped) this.queueChanged()
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

  /**
   * Emit an agent event only when someone listens to it (or to every event, `internal/event`): a cordis
   * dispatch costs a stack capture and tracing proxies even when nobody listens, and `agent/text-delta`
   * comes once per streamed chunk.
   */
  private announce(name: 'agent/state' | 'agent/queue' | 'agent/turn-end' | 'agent/text-delta', ...args: unknown[]) {
    if (isHeard(this.ctx, name)) directEmitter(this.ctx, name)(...args)
  }

  private queueChanged() {
    this.announce('agent/queue', this)
  }

  private async drain() {
    if (this.state !== 'idle' || this.maintenanceRequests || this.disposed || this.holds.size) return
    const next = this.queue.shift()
    if (!next) return this.notifyIdle()
    this.queueChanged()
    this.state = 'running'
    this.announce('agent/state', this)
    let finish!: () => void
    this.turnDone = new Promise((resolve) => finish = resolve)
    let summary: TurnSummary
    try {
      summary = await this.runTurn(next)
    } finally {
      this.state = 'idle'
      this.turnDone = undefined
      finish()
      this.announce('agent/state', this)
    }
    this.announce('agent/turn-end', this, summary)
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
    /** The steps' commits, until each is written (or refused). */
    let flushed: Promise<void> | undefined
    try {
      // Each step is one commit (usage, text, tool calls, the records tools append, results; the first
      // step also the turn's message, a refusal too), written when the step ends; the step waits for
      // the write, not for the flush (`ack: 'written'`). A model request is not an effect: the flush
      // runs while the next one is out and past the turn's end. Every effect still waits for it — a
      // tool that changes something waits for `session.durable()` (write-ahead), and other writers
      // (operator commands, HTTP) are acknowledged only once durable: the connection waits for what is
      // written before it answers a change. A flush that fails fails the store: nothing after it is
      // acknowledged. (On MySQL a write is its commit: there the step waits for it as before.)
      this.session.openStep()
      if (!input.meta.recorded) {
        await this.session.append(EventTypes.userMessage, { text: input.message, origin: input.meta.origin ?? 'user' })
      }
      const adapter = this.models.get(this.model)
      let results: ToolResult[] = []
      for (let step = 0; step < this.options.maxStepsPerTurn; step++) {
        this.session.openStep()
        try {
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
            signal: abort.signal, onText: (delta) => this.announce('agent/text-delta', this, delta),
          })
          await flushed
          summary.steps++
          if (answer.text) await this.session.append(EventTypes.assistantMessage, { text: answer.text })
          if (answer.usage) {
            await this.session.append('model/usage', {
              route: this.model, step, promptTokens: answer.usage.promptTokens, completionTokens: answer.usage.completionTokens,
              ...(answer.usage.cachedTokens !== undefined ? { cachedTokens: answer.usage.cachedTokens } : {}),
              ...(answer.usage.estimated ? { estimated: true } : {}),
            })
          }
          if (!answer.toolCalls?.length) break
          // A stop wins over what the model asked for: no call of this step starts after a cancel.
          if (abort.signal.aborted) {
            summary.cancelled = true
            break
          }
          results = []
          for (const call of answer.toolCalls) {
            if (abort.signal.aborted) {
              summary.cancelled = true
              break
            }
            summary.toolCalls.push(call.name)
            results.push(await this.tools.execute(this.session, call.name, call.args ?? {}, {
              agentId: this.id, signal: abort.signal, modelCallId: call.id, invalidArgs: call.invalidArgs,
            }))
          }
        } finally {
          // The previous step's write settles before this one's is waited for.
          const previous = flushed
          const commit = this.session.commitStep({ ack: 'written' })
          commit.catch(() => {})
          flushed = previous ? previous.then(() => commit) : commit
        }
        if (summary.cancelled) break
      }
      await flushed
      // A turn that ran no step (no steps allowed) still commits its message.
      await this.session.commitStep({ ack: 'written' })
    } catch (error) {
      // What the turn staged before the fault is still written (when the fault was the commit, nothing is left).
      await this.session.commitStep().catch(() => {})
      await flushed?.catch(() => {})
      // A cancel that interrupted the model request ends the turn as cancelled, not as a fault.
      if (abort.signal.aborted) {
        summary.cancelled = true
        return summary
      }
      const coded = asTaskwardError(error)
      summary.error = { code: coded.code, message: coded.message }
      await this.session.append('agent/error', summary.error).catch(() => {})
    } finally {
      if (this.abort === abort) this.abort = undefined
    }
    return summary
  }
}

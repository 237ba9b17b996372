import type { Context } from 'cordis'
import { listenersOf, provideService } from '@taskward/cordis-compat'
import { directEmitter, original, type Acknowledgement, type Agent, type Agents, type Projections, type Session, type Sessions } from '@taskward/host'
import {
  applySupervisorEvent, isRecordEnvelope, RECORD_EVENT_TYPE, repairReader, reviewJobReader, SUPERVISOR_PROJECTION_KEY,
  SUPERVISOR_PROJECTION_VERSION, SUPERVISOR_EVENT_TYPES, supervisorStateThrough, initSupervisorState, loadedConfig, taskReader, taskStateEnvelope, TaskwardError,
  taskStatusView, combineProgressSignals, findTask, TASK_NAMESPACE, TASK_STATE_KIND, transitionKind, type ProgressSignal, type RecordEnvelope, type RecordReader, type SessionEvent, type TaskStatusView, type SupervisorState, type Task, type TransitionAt,
} from '@taskward/protocol'
import { holdInputDuringReviews } from './input-hold'
import { Config } from './config'
import { KeyedLock } from '@taskward/host'
import { Controller, type ControllerStatus } from './continuation'
import { Reviews } from './reviews'
import { registerGuard } from './guard'
import { registerRepeatGuard } from './repeats'
import { registerTaskTools } from './tools'
import { BUILTIN_SUBCOMMANDS, registerTaskCommand } from './commands'
import type { CompletionGate, ProgressSource, ResumeGuard, TaskSubcommand, TaskTransition, Transaction } from './extensions'

export type { CompletionGate, ProgressSource, ResumeGuard, TaskSubcommand, TaskTransition, Transaction } from './extensions'

declare module 'cordis' {
  interface Context {
    supervisor: Supervisor
  }
  interface Events {
    /** After a supervisor record was appended to a main session (console live updates). */
    'supervisor/changed'(sessionId: string, state: SupervisorState): void
    /**
     * Once per committed task snapshot, after its record was appended (read returns it; durable
     * before any effect it authorizes: docs/supervisor.md, "Listening to transitions"). Not a veto: a
     * listener that throws is logged and changes nothing.
     */
    'supervisor/transition'(transition: TaskTransition): void
  }
}

/** How often `transact` decides again when the session moved on under it. */
const TRANSACT_ATTEMPTS = 5

/** The part of the `admission` service the supervisor uses (it is optional, so not imported). */
interface ReaderRegistry {
  registerReader(reader: RecordReader): unknown
}

const SUPERVISOR_NAMESPACES = new Set([taskReader.namespace, reviewJobReader.namespace, repairReader.namespace])

/**
 * The `supervisor` service: tasks of main sessions, kept only as records in the session log and read
 * through the pure projection of `@taskward/protocol`. Every write goes through `transact`, which
 * serializes per session and refuses records that would poison the projection. See docs/supervisor.md.
 */
export class Supervisor {
  static readonly provide = 'supervisor'
  static inject = {
    sessions: { required: true },
    projections: { required: true },
    tools: { required: true },
    models: { required: true },
    agents: { required: true },
    commands: { required: true },
    admission: { required: false },
  }

  static Config = Config

  readonly controller: Controller
  readonly reviews: Reviews
  // Cordis hands callers a prototype-derived view of the service, so state lives in containers that
  // are mutated in place and never reassigned.
  private readonly locks = new KeyedLock()
  private readonly mirrors = new Map<string, SupervisorState>()
  private readonly gates = new Set<CompletionGate>()
  private readonly resumeGuards = new Set<ResumeGuard>()
  private readonly subcommands = new Map<string, TaskSubcommand>()
  private readonly progressSources = new Set<ProgressSource>()
  private readonly home: Context
  /**
   * The kernel services the per-call paths read (state, resolve, mainAgent: several times a step),
   * each read once: cordis' context getter costs a stack capture and a tracing proxy per read. All are
   * required injects, so this plugin restarts when one changes; registering still goes through `ctx`.
   */
  private readonly kernel: { readonly sessions: Sessions, readonly projections: Projections, readonly agents: Agents }
  /** The calling plugin's context (the tracing view callers get sets it; see `provideService`). */
  protected ctx: Context

  constructor(ctx: Context, public config: Config) {
    this.ctx = ctx
    this.home = ctx
    this.kernel = { sessions: original(ctx.sessions), projections: original(ctx.projections), agents: original(ctx.agents) }
    this.config = Config(loadedConfig('supervisor', config))
    ctx.projections.register<SupervisorState>({
      key: SUPERVISOR_PROJECTION_KEY,
      version: SUPERVISOR_PROJECTION_VERSION,
      init: initSupervisorState,
      apply: applySupervisorEvent,
      // Only records change the state: a rebuild reads them alone (the type index), and the
      // skipped events still move `asOfSeq`, which `state`, `currentState` and `transact` compare
      // with the session's last seq.
      types: SUPERVISOR_EVENT_TYPES,
      skipTo: supervisorStateThrough,
    })
    // The host forgot the session's projection caches (past its memory bound): the mirror goes too, or
    // every session this process ever read would stay in memory. Absent on a host that never forgets.
    ctx.projections.observeForgotten?.((sessionId) => this.mirrors.delete(sessionId))
    // The reader registry is optional: without it nobody checks reader admission. The repair
    // namespace's reader is registered by its one owner, the repair plugin.
    ctx.inject(['admission'], (ctx) => {
      const admission = (ctx as Context & { admission: ReaderRegistry }).admission
      for (const reader of [taskReader, reviewJobReader]) admission.registerReader(reader)
    })
    // An observer of the sessions service, not a `session/event` listener: called directly on every append,
    // without cordis' per-listener tracing (which costs more than the insert). Disposing the plugin removes it.
    ctx.sessions.observe((session, event) => this.observe(session, event))
    // A refused step's records were folded into the mirror: forget it (the next read folds the log).
    ctx.sessions.observeRollback((session, fromSeq) => {
      const mirror = this.mirrors.get(session.id)
      if (mirror && mirror.asOfSeq >= fromSeq) this.mirrors.delete(session.id)
    })
    this.controller = new Controller(ctx, this, this.config)
    this.reviews = new Reviews(ctx, this, this.config)
    registerGuard(ctx, this)
    registerRepeatGuard(ctx, this, this.config.repeatedCallLimit)
    registerTaskTools(ctx, this)
    registerTaskCommand(ctx, this)
    holdInputDuringReviews(ctx, this)
    provideService(ctx, 'supervisor', this)
  }

  /** The supervisor projection of a session, folded up to its last event. */
  async state(session: Session | string): Promise<SupervisorState> {
    const resolved = await this.resolve(session)
    const mirror = this.mirrors.get(resolved.id)
    if (mirror && mirror.asOfSeq >= resolved.seq - 1) return mirror
    // The cache is written behind: every read (and the step guard's first answer) waits only for the fold.
    const state = await this.kernel.projections.get<SupervisorState>(resolved, SUPERVISOR_PROJECTION_KEY, { background: true })
    const latest = this.mirrors.get(resolved.id)
    if (!latest || latest.asOfSeq < state.asOfSeq) this.mirrors.set(resolved.id, state)
    return this.mirrors.get(resolved.id)!
  }

  /** The in-memory state of a session when it is current, else undefined (the step guard's synchronous path). */
  currentState(session: Session): SupervisorState | undefined {
    const mirror = this.mirrors.get(session.id)
    return mirror && mirror.asOfSeq >= session.seq - 1 ? mirror : undefined
  }

  /** What `task_status` and `/task` show: the status view plus the controller's hold on the session. */
  async status(session: Session | string): Promise<TaskStatusView & { controller: ControllerStatus }> {
    const resolved = await this.resolve(session)
    const state = await this.state(resolved)
    return { ...taskStatusView(state), controller: this.controller.status(resolved.id, state.current) }
  }

  /** Forget the in-memory state of a session (or all); the next read folds the projection again. */
  forget(sessionId?: string) {
    if (sessionId) this.mirrors.delete(sessionId)
    else this.mirrors.clear()
  }

  /**
   * Run `fn` on the current state and append the records it returns, serialized per session. Each
   * record is first folded onto the state as a synthetic event; if any would poison the projection
   * nothing is written (`TASK_INVALID`), so a transition is never half-applied. `commit`: written at
   * once even while a step of the session is open (what the step staged goes first), resolving only
   * once durable — for writers outside that step (an HTTP click), which must not answer for a record a
   * refused step commit takes down (see `Session.append`). `ack: 'written'`: resolve once the records
   * are written, before their flush (see `Session.appendBatch`) — for a decision whose only consequence
   * is a model request (a review's verdict, a reviewer's job) or that something else acknowledges once
   * durable (a command's reply).
   */
  async transact<T>(session: Session | string, fn: (state: SupervisorState) => Promise<Transaction<T>> | Transaction<T>, options: { commit?: boolean, ack?: Acknowledgement } = {}): Promise<T> {
    const resolved = await this.resolve(session)
    return this.locks.run(resolved.id, async () => {
      for (let attempt = 1; ; attempt++) {
        // The records are checked at the seqs they will get, and written only at exactly those
        // seqs: if anything else was appended meanwhile (a tool call, a user message, another
        // host), decide again on the new state instead of writing a record that names a stale seq.
        const at = resolved.seq
        const state = await this.state(resolved)
        const { records, result } = await fn(state)
        if (!records.length) return result
        if (resolved.seq === at && state.asOfSeq === at - 1) {
          const folded = this.check(state, records, at)
          try {
            await resolved.appendBatch(records.map((data) => ({ type: RECORD_EVENT_TYPE, data })), { expectSeq: at, commit: options.commit, ack: options.ack })
            this.announce(resolved, records, [state, ...folded], at)
            return result
          } catch (error) {
            if (!TaskwardError.is(error, 'SEQ_CONFLICT') || attempt >= TRANSACT_ATTEMPTS) throw error
          }
        } else if (state.asOfSeq >= at) {
          // The state was read from events another host appended: this process's next seq is
          // behind them. Catch up and decide again (it counts as an attempt, like a lost append).
          resolved.catchUp(state.asOfSeq)
          if (attempt >= TRANSACT_ATTEMPTS) {
            throw new TaskwardError('SEQ_CONFLICT', `Session ${resolved.id} kept changing while the supervisor decided; nothing was written. Retry.`)
          }
        } else if (attempt >= TRANSACT_ATTEMPTS) {
          throw new TaskwardError('SEQ_CONFLICT', `Session ${resolved.id} kept changing while the supervisor decided; nothing was written. Retry.`)
        }
      }
    })
  }

  /** A task transition as one state record: `transition(current, at)`; an unchanged task writes nothing. */
  apply(session: Session | string, transition: (task: Task | undefined, at: TransitionAt) => Task, options: { ack?: Acknowledgement } = {}): Promise<Task> {
    return this.transact(session, async (state) => {
      const resolved = await this.resolve(session)
      const next = transition(state.current, { seq: resolved.seq, time: Date.now() })
      return next === state.current ? { records: [], result: next } : { records: [taskStateEnvelope(next)], result: next }
    }, options)
  }

  /** Add a completion gate for as long as the calling plugin is loaded. Returns the disposer. */
  registerCompletionGate(gate: CompletionGate) {
    const gates = this.gates
    return this.ctx.effect(() => {
      gates.add(gate)
      return () => gates.delete(gate)
    })
  }

  /**
   * Add a resume guard for as long as the calling plugin is loaded: asked, in registration order, before
   * `/task resume` resumes a paused task. Returns the disposer.
   */
  registerResumeGuard(guard: ResumeGuard) {
    const guards = this.resumeGuards
    return this.ctx.effect(() => {
      guards.add(guard)
      return () => guards.delete(guard)
    })
  }

  /** The first refusal of a resume guard, or undefined. A guard that throws refuses (closed) with its error. */
  async resumeRefusal(session: Session, task: Task): Promise<TaskwardError | undefined> {
    for (const guard of [...this.resumeGuards]) {
      const refusal = await Promise.resolve().then(() => guard(session, task)).catch((error: unknown) => TaskwardError.is(error) ? error
        : new TaskwardError('INTERNAL', `A resume guard failed: ${(error as Error)?.message ?? error}. The task stays paused; retry /task resume.`, { taskId: task.id }))
      if (refusal) return refusal
    }
  }

  /**
   * Add `/task <name> …` for as long as the calling plugin is loaded. Built-in subcommands and a name
   * another plugin already added are refused (`CONFIG_INVALID`). Returns the disposer.
   */
  registerSubcommand(name: string, handler: TaskSubcommand) {
    if (!/^[a-z][a-z-]*$/.test(name) || BUILTIN_SUBCOMMANDS.includes(name) || this.subcommands.has(name)) {
      throw new TaskwardError('CONFIG_INVALID', `/task ${name} cannot be added: the name is invalid or already taken. Choose another subcommand name.`)
    }
    const subcommands = this.subcommands
    return this.ctx.effect(() => {
      subcommands.set(name, handler)
      return () => {
        if (subcommands.get(name) === handler) subcommands.delete(name)
      }
    })
  }

  /**
   * Add a source of objective progress for as long as the calling plugin is loaded. Before the
   * controller spends a progress review on turns without a stage report, it asks the sources: shown
   * progress continues the task, anything else leads to the review. Returns the disposer.
   */
  registerProgressSignal(source: ProgressSource) {
    const sources = this.progressSources
    return this.ctx.effect(() => {
      sources.add(source)
      return () => sources.delete(source)
    })
  }

  /** What the progress sources measured (the first showing progress, else the first that measured). */
  async objectiveProgress(session: Session, task: Task): Promise<ProgressSignal | undefined> {
    const signals: (ProgressSignal | undefined)[] = []
    for (const source of [...this.progressSources]) signals.push(await source(session, task))
    return combineProgressSignals(signals)
  }

  /** The handler of an added `/task` subcommand, or undefined. */
  subcommand(name: string): TaskSubcommand | undefined {
    return this.subcommands.get(name)
  }

  /** The first refusal of a completion gate, or undefined when every gate lets the task complete. */
  async completionRefusal(session: Session, task: Task): Promise<TaskwardError | undefined> {
    for (const gate of [...this.gates]) {
      const refusal = await gate(session, task)
      if (refusal) return refusal
    }
  }

  /** The live agent of a main session, or undefined. */
  mainAgent(sessionId: string): Agent | undefined {
    const agent = this.kernel.agents.get(sessionId)
    return agent && agent.session.role === 'main' ? agent : undefined
  }

  /** Queue a controller follow-up turn and arm continuation (repair after a reopen, /task resume). */
  continueTask(sessionId: string, message: string): Promise<void> {
    return this.controller.continueWith(sessionId, message)
  }

  /** A new main session with its agent (model default: config `defaultModel`). */
  async startSession(options: { cwd: string, model?: string }): Promise<{ session: Session, agent: Agent }> {
    const agent = await original(this).kernel.agents.create({ cwd: options.cwd, model: options.model ?? this.config.defaultModel, role: 'main' })
    return { session: agent.session, agent }
  }

  resolve(session: Session | string): Promise<Session> {
    return typeof session === 'string' ? this.kernel.sessions.get(session) : Promise.resolve(session)
  }

  /**
   * Emit `supervisor/transition` for each task state record just committed, with the snapshots as a
   * reader folds them. Listeners run one by one; a throw (or a rejected promise) is logged, never
   * passed back to the writer: the records are in the log and a listener is not a veto.
   */
  private announce(session: Session, records: RecordEnvelope[], states: SupervisorState[], at: number) {
    records.forEach((record, index) => {
      if (record.namespace !== TASK_NAMESPACE || record.kind !== TASK_STATE_KIND) return
      const id = (record.payload as Task).id
      const next = findTask(states[index + 1], id)
      if (!next) return
      const previous = findTask(states[index], id)
      const transition: TaskTransition = { kind: transitionKind(previous, next), ...(previous ? { previous } : {}), next, session, seq: at + index }
      for (const listener of listenersOf(this.home, 'supervisor/transition')) {
        const report = (error: unknown) => this.home.logger('supervisor').warn('a supervisor/transition listener failed (ignored; the change is committed):', error)
        try {
          const returned = listener.call(null, transition) as unknown
          if (returned instanceof Promise) returned.catch(report)
        } catch (error) {
          report(error)
        }
      }
    })
  }

  /** Check the records fold cleanly; returns the state after each record. */
  private check(state: SupervisorState, records: RecordEnvelope[], at: number): SupervisorState[] {
    if (state.poisoned) {
      throw new TaskwardError('SUPERVISOR_POISONED',
        `${state.poisoned.message}. Nothing was written; a person must inspect the session log before the task can change.`,
        { seq: state.poisoned.seq })
    }
    let folded = state
    let seq = at
    const states: SupervisorState[] = []
    for (const record of records) {
      if (!isRecordEnvelope(record)) {
        throw new TaskwardError('TASK_INVALID', 'A supervisor transaction returned something that is not a record envelope; nothing was written.')
      }
      // The same JSON round trip an append does, so the check sees exactly what a reader will.
      const event: SessionEvent = { seq: seq++, type: RECORD_EVENT_TYPE, time: Date.now(), data: JSON.parse(JSON.stringify(record)) }
      folded = applySupervisorEvent(folded, event)
      if (folded.poisoned) {
        throw new TaskwardError('TASK_INVALID',
          `Nothing was written: the record ${record.namespace}/${record.kind} ${record.recordId} would poison the supervisor projection `
          + `(${folded.poisoned.message}). Read the task status and retry with a valid transition.`,
          { recordId: record.recordId, reason: folded.poisoned.message })
      }
      states.push(folded)
    }
    return states
  }

  /** Keep in-memory states current and announce supervisor records. */
  private observe(session: Session, event: SessionEvent) {
    const mirror = this.mirrors.get(session.id)
    if (mirror) {
      if (event.seq === mirror.asOfSeq + 1) this.mirrors.set(session.id, applySupervisorEvent(mirror, event))
      else if (event.seq > mirror.asOfSeq + 1) this.mirrors.delete(session.id)
    }
    if (event.type !== RECORD_EVENT_TYPE || !SUPERVISOR_NAMESPACES.has(event.data?.namespace)) return
    const current = this.mirrors.get(session.id)
    const changed = directEmitter<[string, SupervisorState]>(this.home, 'supervisor/changed')
    if (current && current.asOfSeq === event.seq) {
      changed(session.id, current)
    } else {
      this.state(session).then((state) => changed(session.id, state), () => {})
    }
  }
}

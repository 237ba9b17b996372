import type { Context } from 'cordis'
import { onDispose, provideService } from '@taskward/cordis-compat'
import { original, type Projections, type Session, type Sessions } from '@taskward/host'
import type { Supervisor } from '@taskward/plugin-supervisor'
import type {} from '@taskward/plugin-workspace'
import {
  decide, decisionPayload, foldRecovery, initRecoveryState, isBudgetStop, latestRecoveryAttempt, RECORD_EVENT_TYPE, stopsAfterProgress,
  loadedConfig, reconcileJournal, RECOVERY_NAMESPACE, recoveryReader, recoveryRecord, resolveBudgets, TaskwardError,
  type AgentClaim, type AttemptPayload, type AttemptView, type CandidateRef, type CheckResult, type CheckSpec, type JournalRecord,
  type RecordReader, type RecoveryDecision, type RecoveryKind, type RecoveryPayloads, type RecoveryState,
} from '@taskward/protocol'
import { Config } from './config'
import { observedParent, readCandidateOnce, type Workspace } from './candidate'
import { taskStartSeq, turnEvidence } from './evidence'
import { KeyedLock } from '@taskward/host'
import { runOnCopies } from './copies'
import { MemoryCopies } from './memory-copies'
import { wireRecovery } from './wiring'
import { wirePins, type PinWarden } from './pins'
import { chooseSandbox, relativePathWarning, type SandboxChoice } from './sandbox'

declare module 'cordis' {
  interface Context {
    recovery: Recovery
  }
}

export const RECOVERY_PROJECTION_KEY = RECOVERY_NAMESPACE
/** Bump when the fold's shape changes: cached states of another version are rebuilt from seq 0. */
export const RECOVERY_PROJECTION_VERSION = 3

/** How often a new attempt reads the candidate again when the workspace moved under its copies. */
const CANDIDATE_READS = 3

interface ReaderRegistry {
  registerReader(reader: RecordReader): unknown
}

/** One recovery record to append: its kind, record id and payload. */
export type RecoveryEntry = { [K in RecoveryKind]: { kind: K, recordId: string, payload: RecoveryPayloads[K] } }[RecoveryKind]

/** A candidate-journal record as a recovery entry (its id: the journal id and its stage, or `:receipt`). */
function journalEntry(record: JournalRecord): RecoveryEntry {
  return record.kind === 'receipt'
    ? { kind: 'receipt', recordId: `${record.payload.journalId}:receipt`, payload: record.payload }
    : { kind: 'candidate', recordId: `${record.payload.journalId}:${record.payload.stage}`, payload: record.payload }
}

export interface AttemptOptions {
  claim?: AgentClaim
  nodeId?: string
  /** Re-verify the latest attempt's candidate (no agent turn): a rerun record. */
  rerun?: boolean
}

/**
 * The `recovery` service: runs the controller-owned checks against a copy of the candidate, records
 * attempts, decisions and the candidate journal in the session log, and decides with the pure core of
 * `@taskward/protocol` (`decide`). Everything it knows is folded from those records. See docs/recovery.md.
 */
export class Recovery {
  static readonly provide = 'recovery'
  static inject = {
    sessions: { required: true },
    projections: { required: true },
    tools: { required: true },
    agents: { required: true },
    supervisor: { required: true },
    workspace: { required: true },
    admission: { required: false },
  }

  static Config = Config

  readonly lock = new KeyedLock()
  readonly home: Context
  /** Deferred work (pauses, follow-ups, stage verifications) so callers and tests can wait for it. */
  private readonly deferred = new Set<Promise<unknown>>()
  /** Seq of each task's first state record, by `<session>\0<task>` (found once per task). */
  private readonly taskStarts = new Map<string, number>()
  /**
   * The sandbox `config.sandbox` resolved to at start (its warning is logged once, then); undefined
   * after resolving failed (the launcher could not start), so the next check asks again.
   */
  private sandboxChoice: Promise<SandboxChoice> | undefined
  /** Pinned checks: the write guard, baselines, and the comparison before a check runs. */
  readonly pins: PinWarden
  /**
   * Aborted when this plugin is disposed: the checks it started are killed (the launcher is
   * process-wide, another host's go on) instead of running to their timeout, and recorded as nothing.
   */
  private readonly runs = new AbortController()
  /**
   * Services the per-call paths (the tool and step guards) read, each read once: cordis' context getter
   * costs ~0.1 ms a read. All are required injects, so this plugin restarts when one of them changes.
   * Only for calls: whatever registers something goes through `ctx` (see `original` in @taskward/host).
   */
  readonly kernel: { readonly sessions: Sessions, readonly projections: Projections, readonly supervisor: Supervisor, readonly workspace: Workspace }

  readonly config: Config
  /** Where the checks' copies go: in memory while they fit `memoryCopyBytes`, else the temp directory. */
  readonly memoryCopies: MemoryCopies

  constructor(ctx: Context, config: Partial<Config> = {}) {
    this.home = ctx
    this.kernel = { sessions: original(ctx.sessions), projections: original(ctx.projections), supervisor: original(ctx.supervisor), workspace: original(ctx.workspace) }
    this.config = Config(loadedConfig('recovery', config))
    this.memoryCopies = new MemoryCopies(this.config.memoryCopyBytes)
    this.sandboxChoice = this.resolveSandbox()
    // Once, at start: the checks' PATH leaves the host's relative entries out (see `checkPath`).
    const pathWarning = relativePathWarning()
    if (pathWarning) this.logger.warn(pathWarning)
    ctx.projections.register<RecoveryState>({
      key: RECOVERY_PROJECTION_KEY,
      version: RECOVERY_PROJECTION_VERSION,
      init: initRecoveryState,
      apply: foldRecovery,
    })
    ctx.inject(['admission'], (ctx) => {
      (ctx as Context & { admission: ReaderRegistry }).admission.registerReader(recoveryReader)
    })
    onDispose(ctx, () => this.runs.abort())
    this.pins = wirePins(ctx, this)
    wireRecovery(ctx, this)
    provideService(ctx, 'recovery', this)
  }

  /** Aborted when this plugin is disposed: deferred work waiting on something stops waiting. */
  get stopping(): AbortSignal {
    return this.runs.signal
  }

  /** This plugin's logger (a cordis 3 `Service` had one; both versions have `ctx.logger(name)`). */
  get logger() {
    return this.home.logger('recovery')
  }

  /**
   * The recovery state of a session, folded from its recovery records. The projection's cache is
   * written behind the fold: the guards ask before every step and tool call, and a derived cache need
   * not be durable before they answer (a cache lost to a crash is a longer fold after the restart).
   */
  async state(session: Session | string): Promise<RecoveryState> {
    return this.kernel.projections.get<RecoveryState>(await this.resolve(session), RECOVERY_PROJECTION_KEY, { background: true })
  }

  /**
   * The state when it is already folded up to the session's last event in memory, else undefined:
   * synchronous, writes nothing (the guards' path; they fall back to `state`).
   */
  currentState(session: Session): RecoveryState | undefined {
    return this.kernel.projections.current<RecoveryState>(session, RECOVERY_PROJECTION_KEY)
  }

  /** The sandbox the checks run in: `config.sandbox` as resolved at plugin start. */
  sandbox(): Promise<SandboxChoice> {
    return this.sandboxChoice ??= this.resolveSandbox()
  }

  private resolveSandbox(): Promise<SandboxChoice> {
    const logger = this.home.logger('recovery')
    const choice = chooseSandbox(this.config.sandbox).then((choice) => {
      if (choice.warning) logger.warn(choice.warning)
      return choice
    })
    // Not an answer, only a launcher that could not start (EAGAIN, EMFILE, ENOMEM): kept, it would
    // refuse every check for the plugin's life; unheard, it would be an unhandled rejection.
    choice.catch((error) => {
      if (this.sandboxChoice === choice) this.sandboxChoice = undefined
      logger.warn('could not resolve the recovery sandbox yet (the next check asks again): %s', (error as Error).message)
    })
    return choice
  }

  /** The checks that verify a task: the ones a person set with `/task checks`, else the configured ones. */
  checksFor(state: RecoveryState, taskId: string): CheckSpec[] {
    return state.tasks[taskId]?.checks ?? this.config.checks
  }

  /**
   * Run the task's checks on the current candidate (or, for a rerun, on the latest attempt's) and
   * record the attempt. Returns the attempt with its verdict as folded.
   */
  runChecks(session: Session | string, taskId: string, options: AttemptOptions = {}): Promise<AttemptView> {
    return this.exclusive(session, (resolved) => this.recordAttempt(resolved, taskId, options))
  }

  /** Decide on the task's latest attempt and record the decision with its journal records. */
  decide(session: Session | string, taskId: string, options: { completionRequested?: boolean } = {}): Promise<RecoveryDecision> {
    return this.exclusive(session, (resolved) => this.recordDecision(resolved, taskId, options.completionRequested))
  }

  /** Finish or roll back an interrupted candidate promotion (before anything else is decided). */
  reconcile(session: Session | string): Promise<JournalRecord[]> {
    return this.exclusive(session, async (resolved) => {
      const state = await this.usable(resolved)
      const { actions } = reconcileJournal(state.journal, Date.now())
      await this.appendJournal(resolved, actions)
      return actions
    })
  }

  /** Run `fn` with the session's recovery lock held (one read-decide-append at a time per session). */
  exclusive<T>(session: Session | string, fn: (session: Session) => Promise<T>): Promise<T> {
    return this.resolve(session).then((resolved) => this.lock.run(resolved.id, () => fn(resolved)))
  }

  /** Keep `work` (a pause, a follow-up, a stage verification) until it settles; see `settled`. */
  track(work: Promise<unknown>) {
    // The logger is looked up now: a stopping host disposes it before deferred work settles, and
    // work that fails because the host stopped under it (Ctrl-C) is expected, not worth a warning.
    const logger = this.home.logger('recovery')
    const kept = work.catch((error) => { if (this.home.scope.isActive) logger.warn(error) })
    this.deferred.add(kept)
    kept.finally(() => this.deferred.delete(kept))
  }

  /** Resolves when every deferred action started so far has settled. */
  async settled() {
    while (this.deferred.size) await Promise.all([...this.deferred])
  }

  /** Unlocked: callers hold the session's lock. */
  async recordAttempt(session: Session, taskId: string, options: AttemptOptions): Promise<AttemptView> {
    let state = await this.usable(session)
    // A task that became active before pins existed has no baseline: stamp it now (later changes count).
    if (!state.tasks[taskId]?.pinBaseline) {
      await this.pins.recordBaseline(session, taskId, 'first-attempt')
      state = await this.usable(session)
    }
    const task = state.tasks[taskId]
    const last = latestRecoveryAttempt(state, taskId)
    if (options.rerun && !last) {
      throw new TaskwardError('BAD_REQUEST', `Task ${taskId} has no attempt to re-verify; run its checks first.`, { taskId })
    }
    const specs = this.checksFor(state, taskId)
    const sandbox = (await this.sandbox()).kind
    let candidate: CandidateRef
    let parent: string | undefined
    let checks: CheckResult[]
    for (let tries = 1; ; tries++) {
      // A rerun re-checks the same candidate; a new attempt reads the candidate now (never the agent's word).
      const read = options.rerun ? { candidate: last!.candidate } : await readCandidateOnce(this.kernel.workspace, session.cwd, this.config.candidateSource)
      candidate = read.candidate
      // Observed, not assumed: in git mode a HEAD that does not descend from the authoritative commit
      // gets the parent git shows, and `decide` rejects it.
      parent = options.rerun ? last!.parentCandidate : await observedParent(state, session.cwd, candidate)
      try {
        checks = await runOnCopies({
          workspace: this.kernel.workspace, config: this.config, pins: this.pins, signal: this.runs.signal, logger: this.logger, memory: this.memoryCopies,
        }, { cwd: session.cwd, specs, sandbox, state, taskId, candidate, parts: read.parts })
        break
      } catch (error) {
        // The workspace moved under a new attempt (the agent working on while a stage is verified):
        // read the candidate again. A rerun's candidate is no longer there to re-check.
        const moved = TaskwardError.is(error, 'ARTIFACT_CHANGED') && error.details?.reason === 'candidate-moved'
        if (!moved || options.rerun || tries >= CANDIDATE_READS) throw error
      }
    }
    // A task's first attempt counts from the task's start, not the session's: earlier tasks are not its work.
    const evidence = await turnEvidence(session, last ? last.seq + 1 : await this.taskStart(session, taskId))
    const index = options.rerun ? last!.index : (task?.counters.attempts ?? 0) + 1
    const attemptId = options.rerun ? `${taskId}-a${index}-r${last!.reruns + 1}` : `${taskId}-a${index}`
    const payload: AttemptPayload = {
      attemptId,
      taskId,
      ...options.nodeId ? { nodeId: options.nodeId } : {},
      index,
      ...options.rerun ? { rerunOf: last!.attemptId } : {},
      candidate,
      ...parent ? { parentCandidate: parent } : {},
      configuredChecks: specs.map((spec) => spec.id),
      checks,
      // A rerun is the controller's own step, not the agent's.
      steps: options.rerun ? 1 : evidence.steps,
      ...options.claim ? { agentClaim: options.claim } : {},
      ...!options.rerun && evidence.requests.length ? { agentRequests: evidence.requests } : {},
      strategy: task?.counters.strategyChanges ?? 0,
      ...specs.length ? { sandbox } : {},
      recordedAt: Date.now(),
    }
    const next = await this.append(session, 'attempt', attemptId, payload)
    return latestRecoveryAttempt(next, taskId)!
  }

  /** Unlocked: callers hold the session's lock. Journal records first, then the decision. */
  async recordDecision(session: Session, taskId: string, completionRequested?: boolean): Promise<RecoveryDecision> {
    const state = await this.usable(session)
    const at = Date.now()
    const decision = decide(state, this.config.budgets, { taskId, at, ...completionRequested ? { completionRequested } : {} })
    await this.writeDecision(session, state, decision, at)
    return decision
  }

  /**
   * Unlocked: callers hold the session's lock. After a progress attempt (a stage report, a progress
   * measurement): decide, and record the decision only when it is a budget STOP — the one outcome a
   * progress attempt acts on (the caller stops execution). Anything else is decided at completion.
   */
  async budgetStopAfterProgress(session: Session, taskId: string): Promise<RecoveryDecision | undefined> {
    const state = await this.usable(session)
    const at = Date.now()
    const decision = decide(state, this.config.budgets, { taskId, at })
    if (!stopsAfterProgress(decision)) return undefined
    await this.writeDecision(session, state, decision, at)
    return decision
  }

  /**
   * A decision with its candidate-journal records, as ONE append: the promotion and the decision that
   * makes it are on disk together or not at all (the seed: candidate transitions are atomic), and the
   * step pays one commit instead of five. Reconciliation still finishes a journal that older hosts,
   * which appended its records one by one, left open.
   */
  private async writeDecision(session: Session, state: RecoveryState, decision: RecoveryDecision, at: number) {
    const decisionId = `${decision.taskId}-d${(state.tasks[decision.taskId]?.decisions.length ?? 0) + 1}`
    await this.appendRecords(session, [
      ...decision.journal.map(journalEntry),
      { kind: 'decision', recordId: decisionId, payload: decisionPayload(decision, decisionId, at, resolveBudgets(this.config.budgets)) },
    ])
  }

  /** Seq of the task's first state record (0 when the log has none), found by one scan and kept. */
  private async taskStart(session: Session, taskId: string): Promise<number> {
    const key = `${session.id}\0${taskId}`
    const known = this.taskStarts.get(key)
    if (known !== undefined) return known
    const seq = await taskStartSeq(session, taskId)
    if (seq === undefined) return 0
    this.taskStarts.set(key, seq)
    return seq
  }

  /** Append a recovery record after checking that it folds cleanly; returns the state with it. */
  append<K extends RecoveryKind>(session: Session, kind: K, recordId: string, payload: RecoveryPayloads[K]): Promise<RecoveryState> {
    return this.appendRecords(session, [{ kind, recordId, payload } as unknown as RecoveryEntry])
  }

  /**
   * Append recovery records at consecutive seqs in one commit, after checking that each folds cleanly
   * on the ones before it (a record that would poison the state writes nothing, nor do the others);
   * returns the state with them.
   */
  async appendRecords(session: Session, entries: readonly RecoveryEntry[]): Promise<RecoveryState> {
    let trial = await this.state(session)
    if (!entries.length) return trial
    const envelopes = entries.map(({ kind, recordId, payload }, i) => {
      const envelope = recoveryRecord(kind, recordId, payload as never)
      trial = foldRecovery(trial, { seq: session.seq + i, type: RECORD_EVENT_TYPE, time: Date.now(), data: JSON.parse(JSON.stringify(envelope)) })
      if (trial.poisoned) {
        throw new TaskwardError('INTERNAL', `Recovery did not write ${kind} ${recordId}: ${trial.poisoned.message}. This is a bug in the recovery plugin; report it with the session log.`)
      }
      return envelope
    })
    // The recovery namespace is not folded by the supervisor, so it is appended directly.
    await session.appendBatch(envelopes.map((data) => ({ type: RECORD_EVENT_TYPE, data })))
    return this.state(session)
  }

  /** Journal records (a reconciliation's), appended together. */
  async appendJournal(session: Session, records: readonly JournalRecord[]) {
    if (records.length) await this.appendRecords(session, records.map(journalEntry))
  }

  /** The state, refusing when a recovery record poisoned it (a person must look at the log first). */
  async usable(session: Session): Promise<RecoveryState> {
    const state = await this.state(session)
    if (state.poisoned) {
      throw new TaskwardError('RECORD_UNSUPPORTED', `${state.poisoned.message}. Recovery is blocked until a person repairs the session log.`, { seq: state.poisoned.seq })
    }
    return state
  }

  resolve(session: Session | string): Promise<Session> {
    return typeof session === 'string' ? this.kernel.sessions.get(session) : Promise.resolve(session)
  }
}

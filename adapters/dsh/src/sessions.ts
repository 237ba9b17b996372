import type { Context } from 'cordis'
import { onDispose } from '@taskward/cordis-compat'
import { TaskwardError, type SessionEvent } from '@taskward/protocol'
import type { DshAgent, DshAgents, DshEvent, DshSession, DshSessions } from './dsh-types'
import { consultationMarked } from './consultations'
import { resumeLikeDsh, type DshResumeServices } from './resume'
import { STORE_DEADLINE_MS, storeDeadline } from './deadline'
import { SessionView, viewEvent } from './session-view'

type Observer = (session: SessionView, event: SessionEvent) => void

/**
 * Taskward's `sessions` service (docs/host.md) over DSH's: views of DSH's live sessions (one view per
 * DSH session object, so identity comparisons hold), and observers called on every DSH append.
 * Creating a session is DSH's business (its web app, `session.create`); `create` makes reviewer
 * sessions through `agents` (agents.ts).
 */
export class DshSessionsContract {
  readonly observers = new Set<Observer>()
  private readonly views = new WeakMap<DshSession, SessionView>()
  /** Stored sessions being resumed now (see `open`). */
  private readonly opening = new Map<string, Promise<DshAgent>>()
  /** Sessions this adapter created as reviewers (in memory: DSH's header has no role). */
  readonly reviewers = new Set<string>()
  /** Sessions this adapter opened as consultations (`/task consult`, consultations.ts); after a restart, their marker. */
  readonly consultations = new Set<string>()
  /** Whether a session's log carries its consultation marker, read once per DSH session object. */
  private readonly marked = new WeakMap<DshSession, boolean>()
  /** Set by the adapter once the supervision preset exists (supervision-preset.ts). */
  beforeRecord?: (session: DshSession) => void
  /** Called before every Taskward record a session gets (the adapter offers its agent the task tools). */
  onRecord?: (session: DshSession) => void
  protected ctx: Context

  /** How long a flush or a resume may take before it is STORE_UNAVAILABLE (the row's `storeDeadlineMs`, deadline.ts). */
  readonly deadlineMs: number

  constructor(ctx: Context, private readonly dsh: { sessions: DshSessions, agents: DshAgents }, readonly model: string, readonly resume: () => DshResumeServices,
    options: { deadlineMs?: number } = {}) {
    this.ctx = ctx
    this.deadlineMs = options.deadlineMs ?? STORE_DEADLINE_MS
  }

  /** Called by the adapter's `session/event` listener on every DSH append. */
  dispatch(session: DshSession, event: DshEvent) {
    if (!this.observers.size) return
    const view = this.view(session)
    // The event DSH hands the listener, not `session.events[seq]`: that getter copies the whole log
    // after every append.
    // A tool result names its call by seq only: that one lookup takes DSH's snapshot of the log.
    const seen = viewEvent(event, session.id, (seq) => session.events[seq])
    for (const observer of [...this.observers]) {
      try {
        observer(view, seen)
      } catch (error) {
        this.ctx.logger('taskward').warn('a session observer failed (ignored):', error)
      }
    }
  }

  view(session: DshSession): SessionView {
    let view = this.views.get(session)
    if (!view) {
      view = new SessionView({
        agentOf: (id) => this.dsh.agents.get(id) as DshAgent | undefined,
        // DSH's header has no role: a session Taskward created for a main session (a parent, and not
        // one of DSH's own sub-agents) is a reviewer, also after a restart — unless it is a consultation
        // Taskward opened (its marker names that same parent, consultations.ts). A DSH sub-agent works for
        // its main session (the supervisor's guard holds it to that session's admission): not 'main',
        // or a background child would write freely after the main task completed.
        roleOf: (s) => this.reviewers.has(s.id) ? 'reviewer' : isSubagent(s) ? 'subagent'
          : !s.header.parentSession ? 'main' : this.isConsultation(s) ? 'consultation' : 'reviewer',
        parentOf: (s) => this.rootParent(s),
        model: this.model,
        flush: async (s) => { await this.dsh.sessions.flush?.(s) },
        flushDeadlineMs: this.deadlineMs,
        beforeRecord: (s) => { this.beforeRecord?.(s); this.onRecord?.(s) },
      }, session)
      this.views.set(session, view)
    }
    return view
  }

  /** A consultation Taskward opened: in memory since `/task consult`, or (a restart) by its log's marker. */
  private isConsultation(session: DshSession): boolean {
    if (this.consultations.has(session.id)) return true
    let marked = this.marked.get(session)
    if (marked === undefined) {
      // `session.events` copies the log: read once per session object (a marker is only ever written at creation).
      marked = consultationMarked(session)
      this.marked.set(session, marked)
    }
    return marked
  }

  /**
   * The session a session works for: its header's parent, and for a sub-agent of a sub-agent the
   * first ancestor that is not one (the supervisor links a session to a main session, not a chain).
   */
  private rootParent(session: DshSession): string {
    let parent = session.header.parentSession ?? ''
    const seen = new Set([session.id])
    while (parent && !seen.has(parent)) {
      seen.add(parent)
      const up = this.dsh.sessions.get(parent)
      if (!up || !isSubagent(up) || !up.header.parentSession) break
      parent = up.header.parentSession
    }
    return parent
  }

  observe(listener: Observer) {
    const observers = this.observers
    observers.add(listener)
    return onDispose(this.ctx, () => { observers.delete(listener) })
  }

  /**
   * Our kernel tells these listeners when a refused step's staged events are taken back. DSH appends
   * synchronously and never takes an event back (durability is its `flush`): nothing ever rolls back
   * here, so the listener is only registered, to keep the contract.
   */
  observeRollback(_listener: (session: SessionView, fromSeq: number) => void) {
    return onDispose(this.ctx, () => {})
  }

  observerCount() {
    return this.observers.size
  }

  /**
   * The view of session `id`. A session DSH has on disk but not open (after a restart) is resumed
   * through DSH's `agents.resume` first, as DSH's own API does on first touch: Taskward's records
   * need its live agent, and admission still refuses its steps if they cannot be read.
   */
  async get(id: string): Promise<SessionView> {
    const live = this.dsh.sessions.get(id)
    if (live) return this.view(live)
    try {
      return this.view((await this.open(id)).session)
    } catch (error) {
      if (TaskwardError.is(error, 'STORE_UNAVAILABLE') || TaskwardError.is(error, 'BAD_REQUEST')) throw error
      // Opened meanwhile another way (DSH's own API, a prompt): that is the session.
      const now = this.dsh.sessions.get(id)
      if (now) return this.view(now)
      throw new TaskwardError('SESSION_NOT_FOUND', `Session ${id} is not a DSH session here (or DSH cannot open it).`)
    }
  }

  /**
   * The live agent of stored session `id`, resumed the way DSH's own API does (resume.ts). One resume per
   * session at a time: DSH refuses a second resume of a session it is still opening (several requests
   * right after a restart each touch it). Each caller waits at most the store deadline: a resume that
   * never settles answers STORE_UNAVAILABLE naming the session, never holds every later request.
   */
  async open(id: string): Promise<DshAgent> {
    const live = this.dsh.agents.get(id)
    if (live) return live
    if (!/^[\w.-]{1,128}$/.test(id)) throw new TaskwardError('BAD_REQUEST', 'A session id holds letters, digits, ".", "_" and "-" (at most 128).')
    let opening = this.opening.get(id)
    if (!opening) {
      opening = resumeLikeDsh(this.resume(), id)
      this.opening.set(id, opening)
      const done = () => { if (this.opening.get(id) === opening) this.opening.delete(id) }
      opening.then(done, done)
    }
    return storeDeadline(opening, {
      sessionId: id,
      deadlineMs: this.deadlineMs,
      what: 'DSH\'s resume of the session',
      advice: `DSH did not bring session ${id} back ({why}); nothing was changed. Check DSH's session storage (its disk, `
        + 'its persistence plugin), then retry; a later request waits for the same resume again.',
    })
  }

  async has(id: string) {
    return !!this.dsh.sessions.get(id)
  }

  async list(options: { parentId?: string } = {}) {
    return this.dsh.sessions.list()
      .filter((s) => options.parentId === undefined || s.header.parentSession === options.parentId)
      .sort((a, b) => a.header.createdAt - b.header.createdAt)
      .map((s) => this.view(s))
  }
}

/** One of DSH's own sub-agents (its `subagent`/`subagent_fork` tools write `origin: 'subagent'`). */
function isSubagent(session: DshSession) {
  return !!session.header.parentSession && (session.header as any).origin === 'subagent'
}

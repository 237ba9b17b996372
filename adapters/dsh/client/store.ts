import type { ActionView, RecoveryView, SessionView } from '@taskward/protocol'

/*
 * One task store per DSH session in view: the session's Taskward view (derived once, server-side, by
 * @taskward/protocol — the same JSON the console renders), kept fresh by the console's event stream
 * (a transition reaches an open panel within a second, no reload), and the panel's two doors: DSH's
 * own `commands/execute` for `/task …` lines (the same door as typing them), and Taskward's repair
 * route for propose/confirm/decline. Small components subscribe to it (panel.ts).
 */

export interface PanelView extends SessionView {
  checks?: { loaded: boolean, recovery?: RecoveryView }
  controller?: { armed: boolean, awaitingManualResume: boolean }
  advice?: Record<string, string>
}

export interface Refusal { code: string, error: string }
export interface Outcome { ok: boolean, status: number, body: any, action: string }

export interface StoreState {
  view?: PanelView
  /** Why the view could not be read (not logged in, no such session…). */
  error?: Refusal
  /** The answer to the last click. */
  outcome?: Outcome
  busy: boolean
  live: boolean
  /**
   * DSH's page is inside another page's frame: the panel shows the view read-only (no login, no
   * actions), since a click there may be the framing page's (clickjacking; rc.8 sends no frame-ancestors).
   */
  framed?: boolean
}

/** Whether this page is framed by another (a cross-origin top throws on access: also framed). */
export function isFramed(): boolean {
  try {
    return window.top !== window.self
  } catch {
    return true
  }
}

export const FRAMED_NOTE = 'DSH is shown inside another page, so the Taskward panel is read-only here (a click could be that page\'s). Open DSH in its own tab to act.'

/**
 * The page's Taskward login without a copied token: one POST to `<base>/panel/grant`, which the adapter
 * answers with the HttpOnly cookie only for a same-origin request from DSH's own page (connection.ts).
 */
type Login = 'granted' | 'refused' | 'unavailable'
let granted: Promise<Login> | undefined
function grant(base: string): Promise<Login> {
  granted ??= fetch(`${base}/panel/grant`, { method: 'POST', credentials: 'same-origin' })
    .then((response): Login => response.ok ? 'granted' : retryable(response) ? 'unavailable' : 'refused', (): Login => 'unavailable')
    .then((login) => {
      if (login !== 'granted') granted = undefined
      return login
    })
  return granted
}

/** A 401 after the grant: DSH restarted (a new random operator token), so the cookie is stale — log in again. */
function regrant(base: string): Promise<Login> {
  granted = undefined
  return grant(base)
}

/**
 * An answer's JSON body; a body that is not JSON is what stands between the page and DSH answering (a
 * reverse proxy's 502 page while DSH restarts), so a 5xx one reads as DSH not answering, not as a fault.
 */
async function json(response: Response, next = 'try again in a moment'): Promise<any> {
  return response.json().catch(() => response.status >= 500
    ? { code: 'SERVICE_UNAVAILABLE', error: `DSH does not answer (HTTP ${response.status}); ${next}.` }
    : { code: 'INTERNAL', error: `HTTP ${response.status}` })
}

/** A refusal's `{code, error}`; any other body (a proxy's JSON) is read as DSH not answering. */
async function refusal(response: Response, next?: string): Promise<Refusal> {
  const body = await json(response, next)
  if (typeof body?.code === 'string' && typeof body?.error === 'string') return { code: body.code, error: body.error }
  return { code: response.status >= 500 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL', error: `DSH answered HTTP ${response.status}${next ? `; ${next}` : ''}.` }
}

/**
 * A view read worth repeating: no answer, a 5xx (DSH restarting, a proxy in front of it) or a 404 (DSH
 * up before Taskward's routes are). A 401 the new grant did not cure, a 403 or a 400 stays as it is.
 */
function retryable(response: Response | undefined): boolean {
  return !response || response.status >= 500 || response.status === 404
}

/** How long a burst of changes waits before one refetch (a transition appends several events). */
const REFETCH_COALESCE_MS = 100
/**
 * How long a store outlives its last subscriber: one task — React unsubscribes the leaving component and
 * subscribes the arriving one (the dock, the Task view) in one commit, so the stream is kept across it.
 */
const RELEASE_MS = 0
/**
 * How soon a failed view read (or a stream DSH refused: a 401 after a restart, a proxy's 502) is tried
 * again; each further failure doubles the wait up to RETRY_MAX_MS, and a stream that is live again
 * resets it. Only while someone shows the store: the last subscriber's leaving clears the timer.
 */
const RETRY_FIRST_MS = 2000
const RETRY_MAX_MS = 30_000

export class TaskStore {
  state: StoreState = { busy: false, live: false }
  private readonly listeners = new Set<() => void>()
  private source?: EventSource
  private timer?: ReturnType<typeof setTimeout>
  private loading?: Promise<void>
  private again = false
  /** The last view read succeeded (the page is logged in): a stream may be opened. */
  private readable_ = false
  private release?: ReturnType<typeof setTimeout>
  private retry?: ReturnType<typeof setTimeout>
  private retryMs = RETRY_FIRST_MS
  /** The last view read failed in a way worth repeating (retryable()). */
  private failing = false
  /** The login itself found DSH not answering: the retry logs in first. */
  private loginPending = false
  private disposed = false

  /** `onRelease` drops the store from the page's table once nobody shows it. */
  constructor(readonly base: string, readonly sessionId: string, private readonly onRelease: () => void = () => {}) {}

  /**
   * useSyncExternalStore's subscription, counted: the first subscriber opens the event stream, the last
   * one's leaving closes it and drops the store (a page has 6 connections per origin under HTTP/1.1, and
   * DSH's own /api calls need them).
   */
  subscribe = (listener: () => void) => {
    this.listeners.add(listener)
    if (this.release) clearTimeout(this.release)
    this.release = undefined
    this.openStream()
    // A read that failed before anyone subscribed (React subscribes after its commit) is retried now.
    if (this.failing) this.scheduleRetry()
    return () => {
      this.listeners.delete(listener)
      if (this.listeners.size || this.release) return
      this.release = setTimeout(() => {
        this.release = undefined
        if (this.listeners.size) return
        this.stop()
        this.onRelease()
      }, RELEASE_MS)
    }
  }

  snapshot = () => this.state

  private set(patch: Partial<StoreState>) {
    this.state = { ...this.state, ...patch }
    for (const listener of this.listeners) listener()
  }

  private path(rest: string) {
    return `${this.base}/api${rest.replace(':id', encodeURIComponent(this.sessionId))}`
  }

  async start() {
    if (isFramed()) {
      // No grant and no action; a cookie the browser already holds may still show the view, read-only.
      this.set({ framed: true })
      await this.load()
      return
    }
    const login = await grant(this.base)
    if (login === 'unavailable') {
      // DSH (or a proxy in front of it) does not answer yet: log in again after the back-off, as a read.
      this.failing = this.loginPending = true
      this.set({ error: { code: 'SERVICE_UNAVAILABLE', error: 'DSH does not answer; retrying.' } })
      this.scheduleRetry()
      return
    }
    this.loginPending = false
    if (login === 'refused') {
      this.set({ error: { code: 'UNAUTHORIZED', error: 'This page could not log in to Taskward (the request was not from DSH\'s own page).' } })
      return
    }
    await this.load()
  }

  /** The session's event stream, while someone shows the store and the page may read it. */
  private openStream() {
    if (this.disposed || !this.listeners.size || !this.readable_) return
    if (this.source && this.source.readyState !== EventSource.CLOSED) return
    const source = new EventSource(this.path('/console/sessions/:id/events'), { withCredentials: true })
    this.source = source
    source.addEventListener('ready', (message) => {
      this.retryMs = RETRY_FIRST_MS
      this.set({ live: true })
      // A (re)connect: whatever was appended while the stream was down. ready names the last seq.
      let seq: unknown
      try {
        seq = JSON.parse((message as MessageEvent).data)?.seq
      } catch {}
      if (typeof seq !== 'number' || seq !== (this.state.view?.session?.seq ?? 0) - 1) this.schedule()
    })
    source.addEventListener('changed', () => this.schedule())
    source.addEventListener('error', () => {
      this.set({ live: false })
      // EventSource retries a dropped connection itself, but gives up on an HTTP refusal (a 401 after a
      // DSH restart, a proxy's 502 while DSH is down): read the view again (which logs in again, and is
      // itself retried while it fails), and a read that succeeds reopens the stream.
      if (source.readyState !== EventSource.CLOSED || this.source !== source) return
      this.source = undefined
      this.scheduleRetry()
    })
  }

  /** One view read again after the current back-off (doubled for the next), while anyone shows the store. */
  private scheduleRetry() {
    if (this.disposed || !this.listeners.size || this.retry) return
    const wait = this.retryMs
    this.retryMs = Math.min(wait * 2, RETRY_MAX_MS)
    this.retry = setTimeout(() => {
      this.retry = undefined
      void (this.loginPending ? this.start() : this.load())
    }, wait)
  }

  stop() {
    this.disposed = true
    this.source?.close()
    this.source = undefined
    for (const timer of [this.timer, this.retry, this.release]) if (timer) clearTimeout(timer)
    this.timer = this.retry = this.release = undefined
  }

  private schedule() {
    this.timer ??= setTimeout(() => {
      this.timer = undefined
      void this.load()
    }, REFETCH_COALESCE_MS)
  }

  load(): Promise<void> {
    if (this.loading) {
      this.again = true
      return this.loading
    }
    this.loading = (async () => {
      do {
        this.again = false
        const response = await this.authorized(() => fetch(this.path('/console/sessions/:id/view'), { credentials: 'same-origin', headers: { accept: 'application/json' } }))
          .catch(() => undefined)
        this.readable_ = !!response?.ok
        this.failing = retryable(response)
        if (!response) this.set({ error: { code: 'NETWORK', error: 'DSH could not be reached; retrying.' } })
        else if (this.failing) this.set({ error: await refusal(response, 'retrying') })
        else if (!response.ok) this.set({ error: this.state.framed ? { code: 'FRAMED', error: FRAMED_NOTE } : await refusal(response) })
        else this.set({ view: this.readable(await json(response)), error: undefined })
      } while (this.again)
    })().finally(() => { this.loading = undefined })
      .then(() => {
        if (this.failing) this.scheduleRetry()
        this.openStream()
      })
    return this.loading
  }

  /** A request, sent again once after a new grant when its answer is 401 (never from a framed page). */
  private async authorized(send: () => Promise<Response>): Promise<Response> {
    const response = await send()
    if (response.status !== 401 || this.state.framed || (await regrant(this.base)) !== 'granted') return response
    return send()
  }

  /** The view as this page may use it: framed, without its actions. */
  private readable(view: PanelView): PanelView {
    return this.state.framed ? { ...view, actions: [] } : view
  }

  /** A `/task …` line through DSH's own command door (it shows in the conversation as if typed). */
  async command(action: ActionView | { id: string, command: string }) {
    const line = action.command!
    await this.act(action.id, async () => {
      const response = await fetch('/api/commands/execute', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          type: 'client-request', rpcId: `taskward-${Date.now().toString(36)}`, method: 'commands/execute',
          payload: { args: { agentId: this.sessionId, line, images: [] } },
        }),
      })
      const body = await json(response)
      const result = body?.result?.ok ? body.result.value : undefined
      const answer = result?.result ?? result
      if (!response.ok || !answer) return { ok: false, status: response.status, body: { code: 'COMMAND_FAILED', error: String(body?.result?.error?.message ?? `HTTP ${response.status}`) } }
      if (answer.kind === 'error') {
        const [code, ...rest] = String(answer.text ?? '').split(': ')
        return { ok: false, status: 200, body: { code: /^[A-Z_]+$/.test(code!) ? code : 'REFUSED', error: rest.join(': ') || String(answer.text) } }
      }
      return { ok: true, status: 200, body: { outcome: action.id, text: String(answer.text ?? '') } }
    })
  }

  /** Taskward's repair route: propose, confirm, decline (bound to the revision this view shows). */
  async repair(payload: Record<string, unknown>) {
    await this.act(String(payload.action), async () => {
      // A 401 decided nothing (admission runs first), so sending it again after a new grant is safe.
      const response = await this.authorized(() => fetch(this.path('/sessions/:id/repair'), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
      }))
      return { ok: response.ok, status: response.status, body: await json(response) }
    })
  }

  private async act(action: string, run: () => Promise<Omit<Outcome, 'action'>>) {
    if (this.state.framed) {
      this.set({ outcome: { ok: false, status: 0, body: { code: 'FRAMED', error: FRAMED_NOTE }, action } })
      return
    }
    this.set({ busy: true, outcome: undefined })
    let outcome: Outcome
    try {
      outcome = { ...(await run()), action }
    } catch (error) {
      outcome = { ok: false, status: 0, body: { code: 'NETWORK', error: `DSH could not be reached (${(error as Error).message}).` }, action }
    }
    this.set({ busy: false, outcome })
    await this.load()
  }
}

const stores = new Map<string, TaskStore>()

/**
 * The store of one session, shared by every component showing it; started (logged in, view read) on
 * first use, its stream open while subscribed, dropped after its last subscriber leaves.
 */
export function storeFor(base: string, sessionId: string): TaskStore {
  const key = `${base}\n${sessionId}`
  let store = stores.get(key)
  if (!store) {
    const created = new TaskStore(base, sessionId, () => {
      if (stores.get(key) === created) stores.delete(key)
    })
    store = created
    stores.set(key, store)
    void store.start()
  }
  return store
}

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
let granted: Promise<boolean> | undefined
function grant(base: string): Promise<boolean> {
  granted ??= fetch(`${base}/panel/grant`, { method: 'POST', credentials: 'same-origin' })
    .then((response) => response.ok, () => false)
    .then((ok) => {
      if (!ok) granted = undefined
      return ok
    })
  return granted
}

async function json(response: Response): Promise<any> {
  return response.json().catch(() => ({ code: 'INTERNAL', error: `HTTP ${response.status}` }))
}

/** How long a burst of changes waits before one refetch (a transition appends several events). */
const REFETCH_COALESCE_MS = 100

export class TaskStore {
  state: StoreState = { busy: false, live: false }
  private readonly listeners = new Set<() => void>()
  private source?: EventSource
  private timer?: ReturnType<typeof setTimeout>
  private loading?: Promise<void>
  private again = false
  users = 0

  constructor(readonly base: string, readonly sessionId: string) {}

  subscribe = (listener: () => void) => {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
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
    if (!(await grant(this.base))) {
      this.set({ error: { code: 'UNAUTHORIZED', error: 'This page could not log in to Taskward (the request was not from DSH\'s own page).' } })
      return
    }
    await this.load()
    this.source = new EventSource(this.path('/console/sessions/:id/events'), { withCredentials: true })
    this.source.addEventListener('ready', () => this.set({ live: true }))
    this.source.addEventListener('changed', () => this.schedule())
    this.source.addEventListener('error', () => this.set({ live: false }))
  }

  stop() {
    this.source?.close()
    if (this.timer) clearTimeout(this.timer)
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
        const response = await fetch(this.path('/console/sessions/:id/view'), { credentials: 'same-origin', headers: { accept: 'application/json' } })
          .catch(() => undefined)
        if (!response) this.set({ error: { code: 'NETWORK', error: 'DSH could not be reached.' } })
        else if (!response.ok) this.set({ error: this.state.framed ? { code: 'FRAMED', error: FRAMED_NOTE } : await json(response) })
        else this.set({ view: this.readable(await json(response)), error: undefined })
      } while (this.again)
    })().finally(() => { this.loading = undefined })
    return this.loading
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
      const response = await fetch(this.path('/sessions/:id/repair'), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
      })
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

/** The store of one session, shared by every component showing it; started on first use. */
export function storeFor(base: string, sessionId: string): TaskStore {
  let store = stores.get(sessionId)
  if (!store) {
    store = new TaskStore(base, sessionId)
    stores.set(sessionId, store)
    void store.start()
  }
  return store
}

// The console's entry: the session list (`/`) or one session's task view (`/sessions/:id`). The page
// fetches JSON views, renders them with plain DOM calls and refetches whenever the server-sent event
// stream says the session changed.
import { h, section, time, getJson, postJson, at } from './dom.js'
import { renderTask } from './task.js'
import { renderImpact, renderOutcome, renderOverviewLink } from './impact.js'
import { renderNewSession } from './new-session.js'
import { Operate } from './operate.js'
import { renderChecks } from './checks.js'

const main = document.getElementById('main')
const live = document.getElementById('live')

function showError(error) {
  main.replaceChildren(h('div', { class: 'outcome refusal', role: 'alert' },
    h('p', {}, h('strong', {}, error.code ? `${error.code}: ` : 'Error: '), error.message),
    error.status === 401 ? h('p', {}, 'Open the login link printed when the host started.') : null))
}

async function sessionsPage() {
  live.textContent = ''
  const operate = main.dataset.operate !== 'off'
  const [{ sessions }, options] = await Promise.all([getJson('/api/console/sessions'), operate ? getJson('/api/operator') : undefined])
  const rows = sessions.map((s) => h('li', { class: 'session-item', 'data-session-id': s.id },
    h('a', { href: at(`/sessions/${encodeURIComponent(s.id)}`) }, s.task ? s.task.objective : `Session ${s.id} (no task yet)`),
    h('p', { class: 'muted' }, s.task ? `${s.task.phaseLabel} · cycle ${s.task.acceptanceCycle} · ` : '',
      `${s.historyCount} earlier task${s.historyCount === 1 ? '' : 's'} · ${s.cwd} · started ${time(s.createdAt)}`),
    s.awaitingDecision ? h('p', { class: 'waiting' }, h('strong', {}, 'Waiting for your decision: '), s.awaitingDecision.title) : null,
    s.poisoned ? h('p', { class: 'refusal' }, 'Blocked: the session log holds a record the supervisor cannot read.') : null))
  main.replaceChildren(h('h1', {}, 'Sessions'),
    options ? h('section', { class: 'new-session-card' }, renderNewSession(options)) : null,
    h('h2', {}, 'Sessions on this host'),
    rows.length ? h('ul', { class: 'sessions' }, rows) : h('p', { class: 'muted' }, 'No sessions yet.'))
}

/** State of the session page that must survive a re-render (outcome of the last click, form input, focus). */
const app = {
  sessionId: main.dataset.sessionId,
  view: undefined,
  /** The conversation (transcript, queue, input): built once, kept across re-renders. */
  operate: undefined,
  top: h('div', { id: 'view-top' }),
  bottom: h('div', { id: 'view-bottom' }),
  outcome: undefined,
  async post(payload) {
    try {
      return await postJson(`/api/sessions/${encodeURIComponent(app.sessionId)}/repair`, payload)
    } catch (error) {
      return { ok: false, status: 0, body: { code: 'NETWORK', error: `The host could not be reached (${error.message}).` } }
    }
  },
  setOutcome(outcome) {
    app.outcome = outcome
    refresh().then(() => document.getElementById('action-outcome')?.focus())
  },
}

function snapshotInputs() {
  const kept = new Map()
  for (const el of main.querySelectorAll('[data-keep]')) kept.set(el.dataset.keep, el.type === 'checkbox' ? el.checked : el.value)
  const focused = document.activeElement?.id
  return { kept, focused }
}

function restoreInputs({ kept, focused }) {
  for (const el of main.querySelectorAll('[data-keep]')) {
    if (!kept.has(el.dataset.keep)) continue
    if (el.type === 'checkbox') el.checked = kept.get(el.dataset.keep)
    else el.value = kept.get(el.dataset.keep)
  }
  if (focused) document.getElementById(focused)?.focus()
}

/** Where the plan waits for the user: the Approve plan button (the view's action, bound to the revision this page shows). */
function renderApproval(view) {
  const approve = view.actions.find((action) => action.id === 'approve')
  if (!approve || !app.operate) return null
  return h('div', { class: 'approval', id: 'approval' },
    h('p', {}, h('strong', {}, 'The plan waits for your approval. '), 'Read it below; approving starts the work.'),
    h('button', { type: 'button', class: 'primary', id: 'approve-plan', onclick: () => app.operate.command(approve.command) }, approve.label))
}

function renderSession(view) {
  const proposal = view.proposals.find((p) => p.id === view.awaitingDecision)
  const targetTask = proposal && [view.current, ...view.history].find((t) => t && t.id === proposal.taskId)
  const outcome = renderOutcome(app, app.outcome)
  if (outcome) outcome.setAttribute('tabindex', '-1')
  const current = view.current
  const parts = [
    h('h1', {}, current ? current.objective : `Session ${view.session.id}`),
    h('p', { class: 'muted' }, `Session ${view.session.id} · ${view.session.cwd} · ${view.session.seq} events`,
      view.controller?.awaitingManualResume ? ' · waits for /task resume' : ''),
    view.poisoned ? h('div', { class: 'outcome refusal', role: 'alert' }, view.poisoned.message) : null,
    outcome,
    renderApproval(view),
    proposal ? renderOverviewLink(proposal) : null,
    proposal ? renderImpact(app, proposal, targetTask) : null,
    current
      ? section('current', 'Current task', renderTask(app, current, proposal && proposal.taskId === current.id
        ? { affected: proposal.affectedNodeIds, roots: proposal.rootNodeIds } : {}))
      : section('current', 'Current task', h('p', { class: 'muted' }, 'No task yet: start one with /task new <objective>.')),
    renderChecks(app, current, view.checks),
  ]
  const rest = [
    section('proposals', 'Repair proposals', view.proposals.length
      ? h('ul', { class: 'proposal-list' }, view.proposals.map((p) => h('li', { 'data-proposal-id': p.id, 'data-status': p.status, 'data-source': p.sourceLabel },
        h('strong', {}, p.title), ` — ${p.status} · source: ${p.sourceLabel} · task ${p.taskId} r${p.taskRevision} · roots ${p.rootNodeIds.join(', ')}`
        + ` · ${time(p.proposedAt)}`)))
      : h('p', { class: 'muted' }, 'No repair proposals.')),
    section('history', 'History', view.history.length
      ? view.history.map((task) => h('details', { class: 'history-task', 'data-task-id': task.id },
        h('summary', {}, `${task.objective} — ${task.phaseLabel}, cycle ${task.acceptanceCycle}`),
        renderTask(app, task, proposal && proposal.taskId === task.id ? { affected: proposal.affectedNodeIds, roots: proposal.rootNodeIds } : {})))
      : h('p', { class: 'muted' }, 'No earlier tasks in this session.')),
  ]
  app.top.replaceChildren(...parts.filter(Boolean))
  app.bottom.replaceChildren(...rest)
  if (!app.top.isConnected) main.replaceChildren(...[app.top, app.operate?.element, app.bottom].filter(Boolean))
}

let refreshing
let again = false
/** Refetch and re-render; overlapping requests collapse into one more fetch. */
async function refresh() {
  if (refreshing) {
    again = true
    return refreshing
  }
  refreshing = (async () => {
    do {
      again = false
      const view = await getJson(`/api/console/sessions/${encodeURIComponent(app.sessionId)}/view`)
      app.view = view
      const open = new Set([...main.querySelectorAll('details.history-task[open]')].map((d) => d.dataset.taskId))
      const saved = snapshotInputs()
      renderSession(view)
      for (const d of main.querySelectorAll('details.history-task')) if (open.has(d.dataset.taskId)) d.open = true
      restoreInputs(saved)
      main.dataset.seq = String(view.session.seq)
    } while (again)
  })().finally(() => { refreshing = undefined })
  return refreshing
}

function connect() {
  const source = new EventSource(at(`/api/console/sessions/${encodeURIComponent(app.sessionId)}/events`))
  source.addEventListener('ready', () => {
    live.textContent = 'live'
    // Whatever was appended while (re)connecting.
    app.operate?.fill().catch(() => {})
  })
  source.addEventListener('changed', () => refresh().catch(showError))
  source.addEventListener('event', (message) => app.operate?.onEvent(JSON.parse(message.data)))
  source.addEventListener('delta', (message) => app.operate?.transcript.delta(JSON.parse(message.data).delta))
  source.addEventListener('queue', (message) => app.operate?.renderQueue(JSON.parse(message.data)))
  source.addEventListener('error', () => { live.textContent = 'reconnecting…' })
}

async function start() {
  try {
    if (main.dataset.page === 'session') {
      // A host without Taskward's operator controls (DSH: its own app holds the conversation) shows
      // the task view, DAG, impact panel and history only.
      if (main.dataset.operate !== 'off') app.operate = new Operate(app.sessionId, await getJson('/api/operator'))
      await refresh()
      await app.operate?.load()
      connect()
      if (location.hash) document.querySelector(location.hash)?.focus()
    } else {
      await sessionsPage()
    }
  } catch (error) {
    showError(error)
  }
}

start()

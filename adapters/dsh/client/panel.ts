import { createElement as h, useState, useSyncExternalStore } from 'react'
import type { ActionView, ProposalView, ReviewView, TaskDetailView } from '@taskward/protocol'
import { Dag } from './dag'
import { FRAMED_NOTE, storeFor, type Outcome, type PanelView, type TaskStore } from './store'

/*
 * The Taskward panel for the DSH session in view: small components over one task store. Everything it
 * says comes from the shared view (labels, node rows, impact facts, allowed actions: @taskward/protocol
 * view/*), so it and the console cannot disagree; this file only lays it out.
 */

const when = (ms?: number) => ms === undefined ? 'not recorded' : new Date(ms).toLocaleString()

function Facts({ rows }: { rows: [string, unknown][] }) {
  return h('dl', { className: 'tw-facts' }, rows.flatMap(([term, value]) => [h('dt', { key: `t-${term}` }, term), h('dd', { key: `d-${term}` }, value)]))
}

function Section({ id, title, children }: { id: string, title: string, children?: unknown }) {
  return h('section', { className: 'tw-section', 'aria-labelledby': `tw-${id}` }, h('h3', { id: `tw-${id}` }, title), children)
}

function OutcomeLine({ outcome, advice }: { outcome?: Outcome, advice?: Record<string, string> }) {
  if (!outcome) return null
  if (!outcome.ok) {
    const code = String(outcome.body?.code ?? 'REFUSED')
    return h('div', { className: 'tw-outcome tw-refusal', role: 'alert', 'data-code': code },
      h('p', null, h('strong', null, `Refused (${code}): `), advice?.[code] ?? 'The host refused this action; read its message below.'),
      h('p', null, String(outcome.body?.error ?? '')))
  }
  const body = outcome.body ?? {}
  // A repair click: the route's message (@taskward/protocol impact-text.ts, the console's words too); a `/task` line: DSH's answer.
  const text = body.message ? String(body.message) : body.text ? String(body.text).split('\n')[0] : `Done (${body.outcome}).`
  return h('div', { className: 'tw-outcome tw-success', role: 'status', 'data-outcome': String(body.outcome ?? outcome.action) }, h('p', null, text))
}

function Actions({ store, view, busy }: { store: TaskStore, view: PanelView, busy: boolean }) {
  // Approve, pause, resume and consult are `/task` lines (consult opens a consultation session and names
  // it; the question is asked there). Propose, confirm and decline have their own forms below.
  const commands = view.actions.filter((a) => a.command)
  if (!commands.length) return null
  return h('div', { className: 'tw-actions', role: 'group', 'aria-label': 'Task actions' },
    commands.map((action: ActionView) => h('button', {
      key: action.id, type: 'button', disabled: busy, 'data-action': action.id,
      className: action.id === 'approve' || action.id === 'resume' ? 'tw-primary' : undefined,
      onClick: () => store.command(action),
    }, action.label)))
}

function Impact({ store, proposal, task, busy, decidable }: { store: TaskStore, proposal: ProposalView, task?: TaskDetailView, busy: boolean, decidable: boolean }) {
  const decide = (action: 'confirm' | 'decline') => store.repair({ action, proposalId: proposal.id, taskId: proposal.taskId, revision: task?.revision ?? proposal.taskRevision })
  return h('section', { className: 'tw-section tw-impact', 'aria-labelledby': 'tw-impact', 'data-proposal-id': proposal.id },
    h('h3', { id: 'tw-impact' }, `Repair proposed: ${proposal.title}`),
    h(Facts, { rows: [
      ['Reason', proposal.reason],
      ['Source', `${proposal.sourceLabel}${proposal.proposerSessionId ? ` (session ${proposal.proposerSessionId})` : ''}`],
      ['Root nodes', h('span', { className: 'tw-roots' }, proposal.rootNodeIds.join(', '))],
      ['Affected nodes', h('span', { className: 'tw-affected-list' }, proposal.affectedNodeIds.join(', '))],
      ['Workspace stamp', h('span', null, `${proposal.text.stamp}, digest `, h('code', { title: proposal.artifact.digest }, proposal.artifact.shortDigest))],
      ['Proposed', `${when(proposal.proposedAt)} (seq ${proposal.proposedSeq})`],
    ] }),
    proposal.evidence.length
      ? h('ol', { className: 'tw-evidence', 'aria-label': 'Evidence' }, proposal.evidence.map((quote) => h('li', { key: quote.seq },
        h('span', { className: 'tw-muted' }, `seq ${quote.seq}${quote.type ? ` ${quote.type}` : ' missing'}: `), quote.text)))
      : h('p', { className: 'tw-muted' }, 'No evidence events were cited.'),
    task ? h(Dag, { task, affected: proposal.affectedNodeIds, roots: proposal.rootNodeIds, label: 'impact' }) : null,
    h('p', { className: 'tw-note' }, proposal.text.note),
    // The buttons only where the view allows the decision (a framed page's view allows nothing).
    decidable ? h('div', { className: 'tw-actions' },
      h('button', { type: 'button', className: 'tw-primary', disabled: busy, 'data-action': 'confirm', onClick: () => decide('confirm') }, 'Confirm reopening'),
      h('button', { type: 'button', disabled: busy, 'data-action': 'decline', onClick: () => decide('decline') }, 'Decline')) : null)
}

function ProposeForm({ store, task, busy }: { store: TaskStore, task: TaskDetailView, busy: boolean }) {
  const [open, setOpen] = useState(false)
  const [reason, setReason] = useState('')
  const [roots, setRoots] = useState<string[]>([])
  if (!open) return h('button', { type: 'button', 'data-action': 'propose-repair', onClick: () => setOpen(true) }, 'Propose a repair')
  return h('form', {
    className: 'tw-propose', 'aria-label': 'Propose a repair',
    onSubmit: (event: Event) => {
      event.preventDefault()
      void store.repair({ action: 'propose', taskId: task.id, revision: task.revision, reason: reason.trim(), rootNodeIds: roots }).then(() => setOpen(false))
    },
  },
  h('label', { htmlFor: 'tw-propose-reason' }, 'What is wrong (within this task\'s objective)'),
  h('textarea', { id: 'tw-propose-reason', rows: 3, required: true, value: reason, onChange: (e: any) => setReason(e.target.value) }),
  h('fieldset', null, h('legend', null, 'Root nodes (where the defect is)'),
    task.nodes.map((node) => h('label', { key: node.id, className: 'tw-check' },
      h('input', { type: 'checkbox', checked: roots.includes(node.id), onChange: (e: any) => setRoots(e.target.checked ? [...roots, node.id] : roots.filter((r) => r !== node.id)) }),
      ` ${node.id} — ${node.title}`))),
  h('div', { className: 'tw-actions' },
    h('button', { type: 'submit', className: 'tw-primary', disabled: busy || !reason.trim() || !roots.length }, 'Propose'),
    h('button', { type: 'button', onClick: () => setOpen(false) }, 'Cancel')))
}

function Nodes({ task }: { task: TaskDetailView }) {
  const reviews = new Map<string, ReviewView>(task.reviews.map((r) => [r.jobId, r]))
  return h('ul', { className: 'tw-nodes', 'aria-label': `Nodes of task ${task.id}` }, task.nodes.map((node) => {
    const review = node.review ? reviews.get(node.review.jobId) : undefined
    return h('li', { key: node.id, 'data-node-id': node.id, 'data-status': node.status ?? 'unplanned' },
      h('p', null, h('strong', null, node.id), ` ${node.title} — `, h('span', { className: `tw-status tw-st-${node.status ?? 'unplanned'}` }, node.statusLabel),
        node.attempt ? `, attempt ${node.attempt}` : '', node.dependsOn.length ? ` (after ${node.dependsOn.join(', ')})` : ''),
      node.review ? h('p', { className: 'tw-finding' }, `Last review: ${node.review.verdict}`, node.review.findings.length ? ` — ${node.review.findings.join('; ')}` : '',
        review?.evidenceSeqs.length ? ` (evidence seqs ${review.evidenceSeqs.join(', ')})` : '') : null,
      node.reworkReason ? h('p', { className: 'tw-muted' }, `Rework: ${node.reworkReason}`) : null)
  }))
}

function Reviews({ task }: { task: TaskDetailView }) {
  if (!task.reviews.length) return h('p', { className: 'tw-muted' }, 'No reviews yet.')
  return h('ul', { className: 'tw-reviews' }, task.reviews.map((job) => h('li', { key: job.jobId, 'data-verdict': job.verdict ?? '' },
    `${job.kind}${job.nodeId ? ` of ${job.nodeId}` : ''}: ${job.verdict ?? job.status}`, job.findings.length ? ` — ${job.findings.join('; ')}` : '')))
}

export function Recovery({ view }: { view: PanelView }) {
  const recovery = view.checks?.recovery
  if (!recovery) return null
  return h(Section, { id: 'recovery', title: 'Checks and budgets' },
    h('p', null, recovery.checks.length ? `Checks (${recovery.source === 'task' ? 'set for this task' : 'from the host\'s config'}): ${recovery.checks.map((c) => `${c.id} (${c.command})`).join(', ')}` : 'No checks: the task cannot complete verified.'),
    recovery.lastVerdict ? h('p', { className: 'tw-verdict', 'data-verdict': recovery.lastVerdict.verdict },
      `Last verdict: ${recovery.lastVerdict.verdict} → ${recovery.lastVerdict.action}`,
      recovery.lastVerdict.checks.length ? ` (${recovery.lastVerdict.checks.map((c) => `${c.checkId} ${c.verdict}`).join(', ')})` : '', `. ${recovery.lastVerdict.reason}`) : h('p', { className: 'tw-muted' }, 'No verdict yet.'),
    recovery.unverified ? h('p', { className: 'tw-unverified', 'data-code': recovery.unverified.code, 'data-reason': recovery.unverified.reason },
      h('strong', null, `${recovery.unverified.headline} `), recovery.unverified.message) : null,
    h('ul', { className: 'tw-budgets', 'aria-label': 'Budgets' }, recovery.budgets.map((b) => h('li', { key: b.id }, `${b.label}: ${b.used} of ${b.limit} used, ${b.left} left`))))
}

function TaskBody({ store, task, view, busy, affected, roots }: { store: TaskStore, task: TaskDetailView, view: PanelView, busy: boolean, affected: string[], roots: string[] }) {
  return h('div', null,
    h(Facts, { rows: [
      ['Phase', h('span', { className: `tw-phase tw-ph-${task.phase}`, 'data-phase': task.phase }, task.phaseLabel, task.pauseReasonLabel ? ` — ${task.pauseReasonLabel}` : '', task.enabled ? '' : ' (supervision off)')],
      ['Acceptance cycle', h('span', { 'data-cycle': task.acceptanceCycle }, String(task.acceptanceCycle))],
      ...(task.completedAt !== undefined ? [['Completed', when(task.completedAt)] as [string, unknown]] : []),
    ] }),
    task.acceptanceCriteria.length ? h(Section, { id: `criteria-${task.id}`, title: 'Acceptance criteria' }, h('ul', null, task.acceptanceCriteria.map((c, i) => h('li', { key: i }, c)))) : null,
    task.nodes.length ? h(Section, { id: `plan-${task.id}`, title: 'Plan' }, h(Dag, { task, affected, roots, label: 'plan' }), h(Nodes, { task })) : h('p', { className: 'tw-muted' }, 'No plan yet.'),
    h(Section, { id: `reviews-${task.id}`, title: 'Reviews' }, h(Reviews, { task }),
      task.completionReview ? h('p', null, `Final acceptance: ${task.completionReview.verdict}${task.completionReview.findings.length ? ` — ${task.completionReview.findings.join('; ')}` : ''}`) : null),
    task.isCurrent && view.actions.some((a) => a.id === 'propose-repair') ? h(ProposeForm, { store, task, busy }) : null)
}

export function TaskPanel({ base, sessionId }: { base: string, sessionId: string }) {
  const store = storeFor(base, sessionId)
  const state = useSyncExternalStore(store.subscribe, store.snapshot)
  const view = state.view
  const body = (() => {
    if (!view) {
      return state.error ? h('p', { role: 'alert' }, `${state.error.code}: ${state.error.error}`) : h('p', { className: 'tw-muted' }, 'Loading the task…')
    }
    const current = view.current
    const proposal = view.proposals.find((p) => p.id === view.awaitingDecision)
    const target = proposal ? [current, ...view.history].find((t) => t && t.id === proposal.taskId) : undefined
    return [
      state.framed ? h('p', { key: 'framed', className: 'tw-outcome tw-refusal', role: 'note', 'data-framed': 'true' }, FRAMED_NOTE) : null,
      view.poisoned ? h('div', { key: 'poisoned', className: 'tw-outcome tw-refusal', role: 'alert' }, `Blocked: ${view.poisoned.message}`) : null,
      h(OutcomeLine, { key: 'outcome', outcome: state.outcome, advice: view.advice }),
      current ? h('p', { key: 'objective', className: 'tw-objective' }, current.objective)
        : h('p', { key: 'none', className: 'tw-muted' }, 'No task in this session: type /task new <objective> to start a supervised one.'),
      h(Actions, { key: 'actions', store, view, busy: state.busy }),
      proposal ? h(Impact, { key: 'impact', store, proposal, task: target, busy: state.busy, decidable: view.actions.some((a) => a.id === 'confirm' && a.proposalId === proposal.id) }) : null,
      current ? h(TaskBody, { key: 'task', store, task: current, view, busy: state.busy,
        affected: proposal?.taskId === current.id ? proposal.affectedNodeIds : [], roots: proposal?.taskId === current.id ? proposal.rootNodeIds : [] }) : null,
      h(Recovery, { key: 'recovery', view }),
      view.history.length ? h(Section, { key: 'history', id: 'history', title: `Earlier tasks (${view.history.length})` },
        view.history.map((task) => h('details', { key: task.id, 'data-task-id': task.id },
          h('summary', null, `${task.objective} — ${task.phaseLabel}, cycle ${task.acceptanceCycle}`),
          h(TaskBody, { store, task, view, busy: state.busy, affected: [], roots: [] })))) : null,
    ]
  })()
  return h('div', {
    className: 'tw-panel', 'data-session-id': sessionId, 'data-live': state.live ? 'true' : 'false', 'data-seq': view?.session.seq ?? '',
    'data-revision': view?.current?.revision ?? '', 'data-enabled': view?.current ? String(view.current.enabled) : '',
  },
    h('h2', { className: 'tw-title' }, 'Taskward task', h('span', { className: 'tw-live', 'aria-live': 'polite' }, state.live ? ' · live' : '')),
    body)
}

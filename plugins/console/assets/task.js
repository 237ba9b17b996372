// One task's details: phase, cycle, plan, DAG, nodes, reviews, repair cycles and the propose form.
// Used for the current task and, read-only apart from the form, for every task in history.
import { h, time } from './dom.js'
import { renderDag } from './dag.js'

export function renderTaskSummary(task) {
  return h('dl', { class: 'facts task-facts' },
    h('dt', {}, 'Phase'), h('dd', {}, h('span', { class: `phase ph-${task.phase}`, 'data-phase': task.phase }, task.phaseLabel),
      task.pauseReasonLabel ? [' (', h('span', { class: 'pause-reason', 'data-pause-reason': task.pauseReason }, task.pauseReasonLabel), ')'] : '',
      task.enabled ? '' : ' — supervision off'),
    h('dt', {}, 'Acceptance cycle'), h('dd', { class: 'cycle', 'data-cycle': task.acceptanceCycle },
      String(task.acceptanceCycle), task.cycleRecorded ? '' : ' (implicit first cycle)'),
    h('dt', {}, 'Revision'), h('dd', {}, String(task.revision)),
    h('dt', {}, 'Task id'), h('dd', {}, h('code', {}, task.id)),
    task.completedAt !== undefined ? [h('dt', {}, 'Completed'), h('dd', {}, time(task.completedAt))] : null,
    task.reopenedFromProposalId ? [h('dt', {}, 'Reopened by'), h('dd', {}, `repair ${task.reopenedFromProposalId}`)] : null)
}

/** A box that scrolls sideways by itself on narrow screens (focusable, so the keyboard can scroll it). */
function scrollBox(cls, label, child) {
  return h('div', { class: cls, tabindex: '0', role: 'region', 'aria-label': label }, child)
}

function nodeTable(task, caption) {
  return scrollBox('table-wrap', caption, h('table', { class: 'nodes' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ['Node', 'Title', 'Depends on', 'Attempt', 'Status', 'Last review', 'Rework'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, task.nodes.map((node) => h('tr', { 'data-node-id': node.id, 'data-status': node.status ?? 'unplanned' },
      h('th', { scope: 'row' }, node.id), h('td', {}, node.title), h('td', {}, node.dependsOn.join(', ') || '—'),
      h('td', {}, node.attempt ?? '—'), h('td', {}, h('span', { class: `status st-${node.status ?? 'unplanned'}` }, node.statusLabel)),
      h('td', {}, node.review ? `${node.review.verdict}${node.review.findings.length ? `: ${node.review.findings.join('; ')}` : ''}` : '—'),
      h('td', {}, node.reworkReason ? `${node.reworkReason}${node.priorAcceptance ? ` (replaces accepted attempt ${node.priorAcceptance.attempt})` : ''}` : '—'))))))
}

function reviewTable(task) {
  if (!task.reviews.length) return h('p', { class: 'muted' }, 'No review jobs of this task are in the recent window.')
  return scrollBox('table-wrap', `Reviews of task ${task.id}`, h('table', { class: 'reviews' },
    h('caption', {}, 'Reviews (each ran in its own reviewer session)'),
    h('thead', {}, h('tr', {}, ['Kind', 'Node', 'Status', 'Verdict', 'Findings', 'Evidence seqs', 'Reviewer session', 'Cutoff'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, task.reviews.map((job) => h('tr', { 'data-job-id': job.jobId, 'data-verdict': job.verdict ?? '' },
      h('td', {}, job.kind), h('td', {}, job.nodeId ?? '—'), h('td', {}, job.status), h('td', { class: 'verdict' }, job.verdict ?? '—'),
      h('td', {}, job.findings.join('; ') || '—'), h('td', { class: 'evidence-seqs' }, job.evidenceSeqs.join(', ') || '—'),
      h('td', {}, h('code', {}, job.reviewerSessionId)), h('td', {}, `seq ${job.cutoffSeq}`))))))
}

function completionReview(review, label) {
  if (!review) return null
  return h('p', { class: 'completion-review' }, h('strong', {}, `${label}: `), review.verdict,
    review.findings.length ? ` — ${review.findings.join('; ')}` : '',
    review.evidenceSeqs?.length ? ` (evidence seqs ${review.evidenceSeqs.join(', ')})` : '')
}

function repairCycles(task) {
  if (!task.repairHistory.length) return null
  return h('div', { class: 'repair-history' }, h('h3', {}, 'Earlier acceptance cycles'),
    h('ol', {}, task.repairHistory.map((entry) => h('li', { 'data-cycle': entry.cycle },
      h('p', {}, h('strong', {}, `Cycle ${entry.cycle}`), ` ended by repair “${entry.title}”, confirmed ${time(entry.confirmedAt)} (seq ${entry.confirmationSeq}).`),
      h('p', {}, `Completed: ${time(entry.completedAt)}. Cause: ${entry.reason}`),
      h('p', {}, `Roots ${entry.rootNodeIds.join(', ')}; affected ${entry.affectedNodeIds.join(', ')}.`),
      completionReview(entry.completionReview, 'Final acceptance of that cycle'),
      h('p', {}, 'Accepted runs: ', entry.runs.map((run) => `${run.id} attempt ${run.attempt} ${run.status}`).join(', '))))))
}

/** The propose-repair form, where the view allows it (its `propose-repair` action: the current task, complete, supervised, nothing awaiting a decision). */
export function renderProposeForm(app, task) {
  const prefix = `propose-${task.isCurrent ? 'current' : task.id}`
  if (!task.isCurrent || !app.view?.actions?.some((action) => action.id === 'propose-repair')) {
    return h('p', { class: 'muted' }, task.phase === 'complete'
      ? 'A repair cannot be proposed here now (a proposal waits for a decision, supervision is off, or this is an earlier task).'
      : ['Only a complete task can be repaired; this one is ', task.phaseLabel.toLowerCase(), '.'])
  }
  const status = h('div', { role: 'status', 'aria-live': 'polite', class: 'form-status' })
  const form = h('form', { class: 'propose', 'data-task-id': task.id, id: prefix, 'aria-labelledby': `${prefix}-title` },
    h('h3', { id: `${prefix}-title` }, 'Propose a repair'),
    h('p', { class: 'muted' }, 'Describe a defect within this task\'s objective. A proposal changes nothing until someone confirms it; new features need a new task.'),
    h('label', { for: `${prefix}-reason` }, 'What is wrong (reason)'),
    h('textarea', { id: `${prefix}-reason`, name: 'reason', required: true, rows: 3, maxlength: 10000, 'data-keep': `${prefix}-reason` }),
    h('label', { for: `${prefix}-title-input` }, 'Title (optional; defaults to the start of the reason)'),
    h('input', { id: `${prefix}-title-input`, name: 'title', maxlength: 120, 'data-keep': `${prefix}-title-input` }),
    h('fieldset', {}, h('legend', {}, 'Root nodes (where the defect is)'),
      task.nodes.map((node) => h('div', { class: 'check' },
        h('input', { type: 'checkbox', name: 'root', value: node.id, id: `${prefix}-root-${node.id}`, 'data-keep': `${prefix}-root-${node.id}` }),
        h('label', { for: `${prefix}-root-${node.id}` }, `${node.id} — ${node.title}`)))),
    h('button', { type: 'submit' }, 'Propose repair'),
    status)
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const data = new FormData(form)
    const payload = {
      action: 'propose', taskId: task.id, revision: task.revision,
      reason: String(data.get('reason') ?? '').trim(), rootNodeIds: data.getAll('root').map(String),
    }
    const title = String(data.get('title') ?? '').trim()
    if (title) payload.title = title
    status.textContent = 'Proposing…'
    const outcome = await app.post(payload)
    status.textContent = ''
    if (outcome.ok) form.reset()
    app.setOutcome({ action: 'propose', ...outcome })
  })
  return form
}

export function renderTask(app, task, { affected = [], roots = [] } = {}) {
  const parts = [
    h('p', { class: 'objective' }, task.objective),
    renderTaskSummary(task),
    task.acceptanceCriteria.length ? [h('h3', {}, 'Acceptance criteria'), h('ul', {}, task.acceptanceCriteria.map((c) => h('li', {}, c)))] : null,
    task.planFeedback?.length ? [h('h3', {}, 'Plan reviewer asked for'), h('ul', {}, task.planFeedback.map((c) => h('li', {}, c)))] : null,
    task.nodes.length ? [h('h3', {}, 'Plan'), scrollBox('dag-wrap', `Plan DAG of task ${task.id}`, renderDag(task, { affected, roots })), legend(app),
      nodeTable(task, `Nodes of task ${task.id}`)] : h('p', { class: 'muted' }, 'No plan yet.'),
    task.pendingReview ? h('p', {}, `Waiting for a ${task.pendingReview.kind} review${task.pendingReview.nodeId ? ` of ${task.pendingReview.nodeId}` : ''}.`) : null,
    completionReview(task.completionReview, 'Final acceptance'),
    h('h3', {}, 'Reviews'), reviewTable(task),
    repairCycles(task),
    renderProposeForm(app, task),
  ]
  return parts
}

function legend(app) {
  return h('ul', { class: 'legend', 'aria-label': 'Legend' },
    Object.entries(app.view?.statusLabels ?? {}).map(([st, label]) =>
      h('li', {}, h('span', { class: `swatch st-${st}`, 'aria-hidden': 'true' }), label)),
    h('li', {}, h('span', { class: 'swatch affected', 'aria-hidden': 'true' }), 'affected by the proposed repair'))
}


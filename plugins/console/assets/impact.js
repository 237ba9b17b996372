// The impact panel of a repair proposal and its two native buttons. A click POSTs to the repair
// route with the proposal and the task revision this page shows, so a stale page is refused
// (REPAIR_STALE) instead of acting on something the user did not see.
import { h, time } from './dom.js'
import { renderDag } from './dag.js'

/** The compact line at the top of the task view that links to the impact panel. */
export function renderOverviewLink(proposal) {
  return h('p', { class: 'overview-link', id: 'overview-link' },
    h('strong', {}, 'Repair proposed: '), proposal.title, ' — ',
    h('a', { href: '#impact' }, `review the impact (${proposal.affectedNodeIds.length} affected node${proposal.affectedNodeIds.length === 1 ? '' : 's'}) and decide`))
}

// The stamp line, the note and the outcome messages are the view's words (@taskward/protocol
// view/impact-text.ts: proposal.text, the repair route's `message`), shared with DSH's panel.
export function renderImpact(app, proposal, task) {
  const panel = h('section', { id: 'impact', class: 'impact', 'aria-labelledby': 'impact-title', 'data-proposal-id': proposal.id, tabindex: '-1' },
    h('h2', { id: 'impact-title' }, 'Impact of the proposed repair'),
    h('p', { class: 'proposal-title' }, proposal.title),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Reason'), h('dd', { class: 'reason' }, proposal.reason),
      h('dt', {}, 'Source'), h('dd', { class: 'source', 'data-source': proposal.sourceLabel }, proposal.sourceLabel,
        proposal.proposerSessionId ? ` (session ${proposal.proposerSessionId})` : ''),
      h('dt', {}, 'Task'), h('dd', {}, `${proposal.taskId} at revision ${proposal.taskRevision}`, task ? ` — acceptance cycle ${task.acceptanceCycle}` : ''),
      h('dt', {}, 'Root nodes'), h('dd', { class: 'roots' }, proposal.rootNodeIds.join(', ')),
      h('dt', {}, 'Affected nodes'), h('dd', { class: 'affected-list' }, proposal.affectedNodeIds.join(', ')),
      h('dt', {}, 'Workspace stamp'), h('dd', { class: 'stamp' },
        proposal.text.stamp, ', digest ',
        h('code', { title: proposal.artifact.digest }, proposal.artifact.shortDigest)),
      h('dt', {}, 'Proposed'), h('dd', {}, `${time(proposal.proposedAt)} (seq ${proposal.proposedSeq})`),
      h('dt', {}, 'Status'), h('dd', { class: 'proposal-status' }, proposal.status)),
    h('h3', {}, 'Evidence'),
    proposal.evidence.length
      ? h('ol', { class: 'evidence' }, proposal.evidence.map((quote) =>
        h('li', { 'data-seq': quote.seq }, h('span', { class: 'seq' }, `seq ${quote.seq}`), quote.type ? ` ${quote.type}` : ' missing',
          h('blockquote', {}, quote.text))))
      : h('p', { class: 'muted' }, 'No evidence events were cited (a proposal from the console cites none).'),
    task ? h('div', { class: 'dag-wrap', tabindex: '0', role: 'region', 'aria-label': `Plan DAG of task ${task.id} with the affected nodes` },
      renderDag(task, { affected: proposal.affectedNodeIds, roots: proposal.rootNodeIds, label: 'impact' })) : null,
    h('p', { class: 'note' }, proposal.text.note),
  )
  const status = h('div', { class: 'outcome', role: 'status', 'aria-live': 'polite', id: 'impact-status' })
  const confirm = h('button', { type: 'button', class: 'primary', id: 'confirm-repair' }, 'Confirm reopening')
  const decline = h('button', { type: 'button', id: 'decline-repair' }, 'Decline')
  const act = async (action) => {
    confirm.disabled = decline.disabled = true
    status.textContent = action === 'confirm' ? 'Confirming: the host waits until the agent is idle…' : 'Declining…'
    const outcome = await app.post({ action, proposalId: proposal.id, taskId: proposal.taskId, revision: task?.revision ?? proposal.taskRevision })
    status.textContent = ''
    app.setOutcome({ action, ...outcome, proposal })
    confirm.disabled = decline.disabled = false
  }
  confirm.addEventListener('click', () => act('confirm'))
  decline.addEventListener('click', () => act('decline'))
  panel.append(h('div', { class: 'actions' }, confirm, decline), status)
  return panel
}

/** What happened after a click or a proposal, for the outcome region at the top of the page. */
export function renderOutcome(app, outcome) {
  if (!outcome) return null
  const { ok, body } = outcome
  if (!ok) {
    const advice = app.view?.advice?.[body.code] ?? 'The host refused this action; read its message below.'
    return h('div', { class: 'outcome refusal', role: 'alert', id: 'action-outcome', 'data-code': body.code },
      h('p', {}, h('strong', {}, `Refused (${body.code}): `), advice),
      h('p', { class: 'server-message' }, body.error),
      body.code === 'REPAIR_STALE' ? h('button', { type: 'button', onclick: () => location.reload() }, 'Reload the page') : null)
  }
  const text = body.message ?? `Done (${body.outcome}).`
  return h('div', { class: 'outcome success', role: 'status', id: 'action-outcome', 'data-outcome': body.outcome }, h('p', {}, text))
}

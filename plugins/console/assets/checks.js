// The current task's checks (the recovery controller's validation commands): what will verify the
// task, where they come from, a plain warning when there are none (completion would stop unverified,
// VALIDATION_MISSING), and a form that sets them through `/task checks <JSON array>`.
import { h, section } from './dom.js'

const OPEN_PHASES = new Set(['planning', 'awaiting-approval', 'active', 'reviewing', 'paused'])

export function renderChecks(app, task, view) {
  if (!view?.loaded || !task || view.taskId !== task.id) return null
  const checks = view.checks ?? []
  const open = OPEN_PHASES.has(task.phase)
  const list = checks.length
    ? h('ul', { class: 'checks-list' }, checks.map((check) => h('li', { 'data-check-id': check.id },
      h('strong', {}, check.id), ': ', h('code', {}, check.argv.join(' ')), ` (timeout ${Math.round(check.timeoutMs / 1000)} s)`)))
    : null
  const warning = !checks.length && open
    ? h('div', { class: 'outcome refusal', id: 'checks-missing', 'data-code': 'VALIDATION_MISSING' },
      h('p', {}, h('strong', {}, 'No checks: this task will stop unverified. '),
        'When completion is asked, the recovery controller refuses it with VALIDATION_MISSING, because nothing objective can show the work is done. '
        + 'Set at least one check below before that.'))
    : null
  // A stage the background verification gave up on: the workspace kept changing under its copies.
  // Its words come with the view (protocol's recoveryView), as the DSH panel shows them.
  const given = view.recovery?.unverified
  const unverified = given
    ? h('div', { class: 'outcome refusal', id: 'checks-unverified', 'data-code': given.code, 'data-reason': given.reason },
      h('p', {}, h('strong', {}, `${given.headline} `), given.message))
    : null
  const field = h('textarea', { id: 'checks-input', name: 'checks', rows: 3, 'aria-describedby': 'checks-help', 'data-keep': 'checks-input', spellcheck: 'false' })
  field.value = JSON.stringify(checks)
  // The form sends /task checks through the operator's input (absent on a host without it).
  const form = open && app.operate
    ? h('form', { id: 'checks-form', class: 'input-form', 'aria-labelledby': 'checks-label' },
      h('label', { id: 'checks-label', for: 'checks-input' }, 'Checks as a JSON array'),
      field,
      h('p', { id: 'checks-help', class: 'muted help' }, 'Each check runs as an argv (no shell) against a copy of the workspace, e.g. ',
        h('code', {}, '[{"id": "test", "argv": ["npm", "test"], "timeoutMs": 600000}]'), '. Sent as ', h('code', {}, '/task checks …'), '; [] removes them.'),
      h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'set-checks' }, 'Set checks')))
    : null
  form?.addEventListener('submit', (event) => {
    event.preventDefault()
    app.operate.command(`/task checks ${field.value.trim()}`)
  })
  return section('checks', 'Checks (recovery)',
    h('p', { class: 'muted checks-source', 'data-source': view.source }, checks.length
      ? (view.source === 'task' ? 'Set for this task with /task checks:' : 'From the host configuration (recovery.checks):')
      : view.source === 'task' ? 'Removed for this task with /task checks.' : 'None configured on this host and none set for this task.'),
    list, warning, unverified, form)
}

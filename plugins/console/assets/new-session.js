// The New session form on the session list: a directory under the host's workspace roots and a model
// route. It POSTs to /api/sessions (the host's operator route) and opens the new session's page.
import { h, requestJson, at } from './dom.js'

export function renderNewSession(options) {
  const roots = options.workspaceRoots ?? []
  const status = h('div', { id: 'new-session-status', role: 'status', 'aria-live': 'polite', class: 'form-status' })
  const form = h('form', { id: 'new-session', class: 'new-session', 'aria-labelledby': 'new-session-title' },
    h('h2', { id: 'new-session-title' }, 'New session'),
    h('label', { for: 'new-cwd' }, 'Directory'),
    h('input', { id: 'new-cwd', name: 'cwd', required: true, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'new-cwd-help', 'data-keep': 'new-cwd' }),
    h('p', { id: 'new-cwd-help', class: 'muted help' },
      roots.length
        ? ['Relative to ', h('code', {}, roots[0]), roots.length > 1 ? ['; or an absolute path under ', roots.slice(1).map((r, i) => [i ? ', ' : '', h('code', {}, r)])] : '',
          '. Directories outside the workspace roots are refused.']
        : 'No workspace root is available on this host; sessions cannot be created here.'),
    h('div', { class: 'check' },
      h('input', { type: 'checkbox', id: 'new-create', name: 'create', checked: true }),
      h('label', { for: 'new-create' }, 'Create the directory if it does not exist')),
    h('label', { for: 'new-model' }, 'Model route'),
    h('select', { id: 'new-model', name: 'model' },
      (options.models ?? []).map((route) => h('option', { value: route, selected: route === options.defaultModel }, route === options.defaultModel ? `${route} (default)` : route))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Start session')),
    status)
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const data = new FormData(form)
    status.replaceChildren(h('p', {}, 'Starting…'))
    const { ok, body } = await requestJson('POST', '/api/sessions', {
      cwd: String(data.get('cwd') ?? '').trim(), model: String(data.get('model') ?? ''), create: data.get('create') === 'on',
    })
    if (ok) {
      location.assign(at(`/sessions/${encodeURIComponent(body.session.id)}`))
      return
    }
    status.replaceChildren(h('p', { class: 'refusal', role: 'alert', 'data-code': body.code }, h('strong', {}, `${body.code}: `), body.error))
  })
  return form
}

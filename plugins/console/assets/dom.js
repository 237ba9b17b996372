// Small DOM helpers for the console (plain ES module, no build step). Text always goes in as text
// nodes, never as HTML, so nothing from the log can inject markup.

const SVG_NS = 'http://www.w3.org/2000/svg'

/**
 * Where the console's routes live on this server: '' on Taskward's own host, the adapter's prefix
 * (e.g. '/taskward') inside another host's web server. The page shell says so in `data-base`.
 */
export const BASE = document.getElementById('main')?.dataset.base ?? ''

/** A console path (`/api/…`, `/sessions/…`) as a URL on this server. */
export function at(path) {
  return path.startsWith('/') ? BASE + path : path
}

function build(element, attrs, children) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (key.startsWith('on') && typeof value === 'function') element.addEventListener(key.slice(2), value)
    else if (key === 'class') element.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value)
    else element.setAttribute(key, value === true ? '' : String(value))
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue
    element.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
  return element
}

/** `h('p', {class: 'x'}, 'text', child)` → an HTML element. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children)
}

/** The same for SVG elements. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children)
}

export function time(ms) {
  if (ms === undefined || ms === null) return 'not recorded'
  return new Date(ms).toLocaleString()
}

export function bytes(n) {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

/** A titled section with an id (for in-page links) and an accessible heading. */
export function section(id, title, ...children) {
  return h('section', { id, 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title), ...children)
}

export async function getJson(url) {
  const response = await fetch(at(url), { credentials: 'same-origin', headers: { accept: 'application/json' } })
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}`, code: 'INTERNAL' }))
  if (!response.ok) throw Object.assign(new Error(body.error ?? `HTTP ${response.status}`), { code: body.code, status: response.status })
  return body
}

/** Send JSON; resolves with `{ok, status, body}` (refusals are answers, not exceptions; status 0: unreachable). */
export async function requestJson(method, url, payload) {
  try {
    const response = await fetch(at(url), {
      method,
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: payload === undefined ? undefined : JSON.stringify(payload),
    })
    const body = await response.json().catch(() => ({ error: `HTTP ${response.status}`, code: 'INTERNAL' }))
    return { ok: response.ok, status: response.status, body }
  } catch (error) {
    return { ok: false, status: 0, body: { code: 'NETWORK', error: `The host could not be reached (${error.message}).` } }
  }
}

/** POST JSON; resolves with `{ok, status, body}`. */
export function postJson(url, payload) {
  return requestJson('POST', url, payload)
}

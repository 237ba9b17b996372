import type { Context } from 'cordis'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TaskwardError } from '@taskward/protocol'

/*
 * The console's pages are thin HTML shells: the script (plain ES modules from plugins/console/assets,
 * no build step, nothing from the network beyond this host) fetches the JSON view and renders it.
 * Every page and asset needs the operator token (the login link's cookie), like the APIs.
 */

/**
 * plugins/console/assets: two levels up from src/routes/*.ts, one from the bundled lib/index.mjs, beside
 * the DSH bundle's index.js (scripts/dsh/pack.mjs copies them there).
 */
export const ASSET_DIRECTORY = ['../../assets/', '../assets/', './assets/']
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((dir) => existsSync(dir + 'console.js')) ?? fileURLToPath(new URL('../../assets/', import.meta.url))

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/** Scripts and styles only from this host; no inline code, no framing. */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
  + "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

export function escapeHtml(text: string) {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** Where the page is served: `base` is the connection's path prefix ('' on our host), `operate` whether the host has operator controls. */
export interface ShellOptions { base?: string, operate?: boolean }

export function pageShell(page: 'sessions' | 'session', sessionId?: string, { base = '', operate = true }: ShellOptions = {}) {
  const title = page === 'sessions' ? 'Sessions' : `Session ${sessionId}`
  const description = page === 'sessions'
    ? 'The Taskward console: every supervised agent session, and a form to start a new one.'
    : 'A Taskward session: its task, the plan\'s DAG, reviews, repair proposals and the conversation with its agent.'
  const data = (sessionId ? ` data-session-id="${escapeHtml(sessionId)}"` : '')
    + (base ? ` data-base="${escapeHtml(base)}"` : '') + (operate ? '' : ' data-operate="off"')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="${escapeHtml(description)}">
<title>${escapeHtml(title)} · Taskward</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${escapeHtml(base)}/assets/console.css">
<script type="module" src="${escapeHtml(base)}/assets/console.js"></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="${escapeHtml(base)}/">Taskward</a><nav aria-label="Console"><a href="${escapeHtml(base)}/">Sessions</a></nav>
<span id="live" class="live" role="status" aria-live="polite">connecting…</span></header>
<main id="main" tabindex="-1" data-page="${page}"${data}><p class="muted">Loading…</p></main>
<noscript><p>The console needs JavaScript to show the task view.</p></noscript>
</body>
</html>
`
}

function html(body: string) {
  return new Response(body, {
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': CONTENT_SECURITY_POLICY },
  })
}

/** The connection's path prefix: '' on our host, e.g. '/taskward' inside DSH's web server (docs/host.md). */
export function basePath(ctx: Context): string {
  return (ctx.connection as { prefix?: string }).prefix ?? ''
}

export function registerPages(ctx: Context) {
  // Read at each request: the operator service may come and go with its plugin.
  const shell = (page: 'sessions' | 'session', sessionId?: string) =>
    pageShell(page, sessionId, { base: basePath(ctx), operate: !!ctx.get('operator') })
  ctx.connection.register({
    path: '/',
    methods: ['GET'],
    access: 'operator',
    handler: () => html(shell('sessions')),
  })
  ctx.connection.register({
    path: '/sessions/:sessionId',
    methods: ['GET'],
    access: 'operator',
    handler: async (_request, { params }) => {
      const session = await ctx.sessions.get(params.sessionId)
      return html(shell('session', session.id))
    },
  })
  // Only the files shipped in assets/ (read and compressed once at start): nothing else on disk is reachable.
  const assets = new Map(readdirSync(ASSET_DIRECTORY).filter((name) => TYPES[extname(name)])
    .map((name) => [name, loadAsset(ASSET_DIRECTORY + name, TYPES[extname(name)])]))
  ctx.connection.register({
    path: '/assets/:file',
    methods: ['GET'],
    access: 'operator',
    handler: (request, { params }) => {
      const asset = assets.get(params.file)
      if (!asset) throw new TaskwardError('NOT_FOUND', `No console asset "${params.file}".`)
      return serveAsset(asset, request.headers)
    },
  })
}

export interface Asset {
  type: string
  etag: string
  identity: Buffer
  gzip: Buffer
  br: Buffer
}

export function loadAsset(path: string, type: string): Asset {
  const identity = readFileSync(path)
  return {
    type,
    etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 22)}"`,
    identity,
    gzip: gzipSync(identity, { level: 9 }),
    br: brotliCompressSync(identity, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }),
  }
}

/** Whether `accept-encoding` accepts `coding` (a `q=0` refuses it). */
function accepts(header: string, coding: string) {
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().split(';').map((p) => p.trim())
    if (name !== coding && name !== '*') return false
    const q = params.find((p) => p.startsWith('q='))
    return !q || Number(q.slice(2)) > 0
  })
}

/**
 * An asset with validators: `ETag` (weak: of the content, the same for every encoding;
 * If-None-Match compares weakly), `Cache-Control: no-cache` (revalidate: a revisit
 * costs a 304, and an upgraded host is never served stale), brotli or gzip when the client takes it.
 */
export function serveAsset(asset: Asset, headers: Headers): Response {
  const common = { etag: `W/${asset.etag}`, 'cache-control': 'no-cache', vary: 'accept-encoding' }
  const tags = (headers.get('if-none-match') ?? '').split(',').map((tag) => tag.trim().replace(/^W\//, ''))
  if (tags.includes(asset.etag) || tags.includes('*')) return new Response(null, { status: 304, headers: common })
  const wanted = headers.get('accept-encoding') ?? ''
  const [body, encoding] = accepts(wanted, 'br') ? [asset.br, 'br'] : accepts(wanted, 'gzip') ? [asset.gzip, 'gzip'] : [asset.identity, undefined]
  return new Response(body, {
    headers: { ...common, 'content-type': asset.type, ...(encoding ? { 'content-encoding': encoding } : {}) },
  })
}

import { expect } from 'chai'
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { bundlePanelStore } from './store-bundle'
import { TaskwardError } from '@taskward/protocol'
import { Context } from 'cordis'
import { admitPanelGrant, isTrustedHost } from '../src/panel-access'
import { DshConnectionContract } from '../src/connection'

/*
 * Review findings on the DSH panel (review-b): each test fails on 6a591ac and states the behaviour a
 * user relies on. Real Chromium, a real HTTP server, the panel's real store code (bundled by esbuild).
 */

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
  // A LAN name for a trustedHosts deployment, resolved to this machine (plain http, as `dsh --host 0.0.0.0 --trusted-host …`).
  '--host-resolver-rules=MAP dsh.test 127.0.0.1']

const codeOf = (run: () => void) => {
  try {
    run()
  } catch (error) {
    if (error instanceof TaskwardError) return error.code
    throw error
  }
  return 'GRANTED'
}

describe('review-b: the panel in DSH\'s page (browser facts)', function () {
  this.timeout(60_000)
  let server: Server
  let port: number
  let browser: Browser
  const grants: IncomingHttpHeaders[] = []
  let openStreams = 0
  const reconnect = { seq: 5, streams: 0 }
  // A DSH restart under an open stream: the old cookie is refused (view and stream) until a new grant.
  const restart = { on: false, granted: 0, end: undefined as undefined | (() => void) }
  let storeJs = ''

  before(async () => {
    storeJs = await bundlePanelStore()
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end('<!doctype html><html><head><title>dsh</title><script src="/store.js"></script></head><body></body></html>')
      } else if (url.pathname === '/store.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' })
        res.end(storeJs)
      } else if (url.pathname === '/taskward/panel/grant') {
        if (restart.on) restart.granted++
        grants.push(req.headers)
        res.writeHead(204)
        res.end()
      } else if (url.pathname.endsWith('/reconnecting/view')) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ session: { seq: reconnect.seq } }))
      } else if (url.pathname.endsWith('/reconnecting/events')) {
        // The first stream drops (DSH busy, a proxy's idle cut); a transition lands before the browser reconnects.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
        res.write(`retry: 500\nevent: ready\ndata: ${JSON.stringify({ seq: reconnect.seq })}\n\n`)
        if (reconnect.streams++ === 0) setTimeout(() => { reconnect.seq = 7; res.end() }, 300)
      } else if (url.pathname.endsWith('/restarting/view') || url.pathname.endsWith('/restarting/events')) {
        if (restart.on && !restart.granted) {
          res.writeHead(401, { 'content-type': 'application/json' })
          res.end('{"code":"UNAUTHORIZED","error":"stale cookie"}')
        } else if (url.pathname.endsWith('/view')) {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ session: { seq: 1 } }))
        } else {
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
          res.write('retry: 300\nevent: ready\ndata: {"seq":0}\n\n')
          restart.end = () => res.end()
        }
      } else if (/\/view$/.test(url.pathname)) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{}')
      } else if (/\/events$/.test(url.pathname)) {
        openStreams++
        req.on('close', () => { openStreams-- })
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
        res.write('retry: 2000\nevent: ready\ndata: {}\n\n')
      } else if (url.pathname === '/ping') {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end('pong')
      } else {
        res.writeHead(404)
        res.end()
      }
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS })
  })

  after(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  it('logs the panel in on a trustedHosts deployment served over plain http (DSH\'s own --trusted-host use)', async () => {
    // Chromium sends Fetch Metadata (Sec-Fetch-Site) only to potentially trustworthy URLs (https, loopback);
    // DSH's page at http://dsh.test:<port> posts the grant with an Origin and without Sec-Fetch-Site.
    const page = await browser.newPage()
    try {
      await page.goto(`http://dsh.test:${port}/`)
      grants.length = 0
      await page.evaluate(() => fetch('/taskward/panel/grant', { method: 'POST', credentials: 'same-origin' }).then((r) => r.status))
      const sent = grants[0]!
      expect(sent.origin, 'the browser\'s Origin').to.equal(`http://dsh.test:${port}`)
      const decision = codeOf(() => admitPanelGrant({
        host: sent.host, origin: sent.origin, secFetchSite: sent['sec-fetch-site'] as string | undefined, trustedHosts: ['dsh.test'],
      }))
      expect(decision, `headers the panel's grant carried: ${JSON.stringify(sent)}`).to.equal('GRANTED')
    } finally {
      await page.close()
    }
  })

  it('still refuses a cross-origin page on that trusted host (another port) when Sec-Fetch-Site is absent', () => {
    // The fix must not open the door: with no Fetch Metadata, the Origin still has to be the Host.
    expect(codeOf(() => admitPanelGrant({ host: `dsh.test:${port}`, origin: 'http://dsh.test:3000', trustedHosts: ['dsh.test'] }))).to.equal('FORBIDDEN')
  })

  it('shows what changed while its event stream was reconnecting (the stream\'s ready names the seq)', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`http://localhost:${port}/`)
      const seen = await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 'reconnecting')
        store.subscribe(() => {}) // as the panel's useSyncExternalStore does: the stream is open while subscribed
        for (let i = 0; i < 50 && !(store.state.view && store.state.live); i++) await new Promise((resolve) => setTimeout(resolve, 100))
        const first = store.state.view.session.seq
        // The stream drops, the session moves on, the browser reconnects and DSH's stream says ready again.
        await new Promise((resolve) => setTimeout(resolve, 3000))
        return { first, after: store.state.view.session.seq, live: store.state.live }
      })
      expect(seen.first).to.equal(5)
      expect(seen.live, 'reconnected').to.equal(true)
      expect(seen.after, 'the panel after the reconnect').to.equal(7)
    } finally {
      await page.close()
    }
  })

  it('reopens its event stream after DSH restarts under it (the stream is refused until the panel logs in again)', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`http://127.0.0.1:${port}/`)
      expect(await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 'restarting')
        store.subscribe(() => {})
        for (let i = 0; i < 50 && !store.state.live; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return store.state.live
      }), 'live before the restart').to.equal(true)
      restart.on = true
      restart.end!()
      const after = await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 'restarting')
        for (let i = 0; i < 20 && store.state.live; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        const dropped = !store.state.live
        for (let i = 0; i < 100 && !store.state.live; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return { dropped, live: store.state.live, error: store.state.error }
      })
      expect(after.dropped, 'the stream went down').to.equal(true)
      expect(restart.granted, 'grants after the restart').to.equal(1)
      expect(after.live, `live again: ${JSON.stringify(after)}`).to.equal(true)
      expect(after.error).to.equal(undefined)
    } finally {
      await page.close()
    }
  })

  it('keeps DSH\'s page reachable after the user has looked at seven sessions (the panel closes streams it no longer shows)', async () => {
    // TaskDock/TaskPanel subscribe through useSyncExternalStore and unsubscribe when the session leaves
    // the view; HTTP/1.1 gives a page 6 connections per origin, and each store's EventSource holds one.
    const page = await browser.newPage()
    try {
      await page.goto(`http://127.0.0.1:${port}/`)
      for (let i = 1; i <= 7; i++) {
        await page.evaluate(async (id) => {
          const store = (globalThis as any).TW.storeFor('/taskward', `session-${id}`)
          const off = store.subscribe(() => {})
          for (let n = 0; n < 50 && !store.state.live; n++) await new Promise((resolve) => setTimeout(resolve, 100))
          off()
          if (!store.state.live) throw new Error(`session-${id}: the shown session's stream never opened`)
        }, i)
      }
      const reached = await page.evaluate(() => Promise.race([
        fetch('/ping').then((r) => r.text()),
        new Promise((resolve) => setTimeout(() => resolve('blocked: no connection left for DSH\'s own requests'), 5000)),
      ]))
      expect(reached).to.equal('pong')
      expect(openStreams, 'event streams left open for sessions no longer shown').to.be.at.most(1)
      // A session shown again gets a fresh store and its stream again.
      const again = await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 'session-1')
        store.subscribe(() => {})
        for (let n = 0; n < 50 && !store.state.live; n++) await new Promise((resolve) => setTimeout(resolve, 100))
        return store.state.live
      })
      expect(again, 'session-1 live again').to.equal(true)
    } finally {
      await page.close()
    }
  })
})

describe('review-b: DSH\'s page framed by a page on another loopback port (same-site, so SameSite=Strict does not stop it)', function () {
  this.timeout(60_000)
  let dsh: Server
  let other: Server
  let browser: Browser
  let dshPort = 0
  let otherPort = 0
  const grants: string[] = []

  before(async () => {
    const storeJs = await bundlePanelStore()
    // DSH rc.8 sends no X-Frame-Options / frame-ancestors, so any page may frame its app.
    dsh = createServer((req, res) => {
      if (req.url === '/') { res.writeHead(200, { 'content-type': 'text/html' }); res.end('<!doctype html><title>dsh</title><script src="/store.js"></script>'); return }
      if (req.url === '/store.js') { res.writeHead(200, { 'content-type': 'text/javascript' }); res.end(storeJs); return }
      if (req.url === '/taskward/panel/grant') {
        grants.push(String(req.headers['sec-fetch-site']))
        res.writeHead(204, { 'set-cookie': 'taskward_token=t; HttpOnly; SameSite=Strict; Path=/taskward' })
        res.end()
        return
      }
      if (req.url?.endsWith('/view')) {
        const cookie = String(req.headers.cookie ?? '')
        res.writeHead(cookie.includes('taskward_token=t') ? 200 : 401, { 'content-type': 'application/json' })
        res.end(cookie.includes('taskward_token=t') ? JSON.stringify({ actions: [{ id: 'approve', label: 'Approve plan', command: '/task approve t@3' }] }) : '{"code":"UNAUTHORIZED","error":"no cookie"}')
        return
      }
      res.writeHead(404)
      res.end()
    })
    await new Promise<void>((resolve) => dsh.listen(0, '127.0.0.1', resolve))
    dshPort = (dsh.address() as { port: number }).port
    // A dev server on the same machine (e.g. the app the supervised agent is building), which frames DSH's app.
    other = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(`<!doctype html><title>dev</title><iframe src="http://127.0.0.1:${dshPort}/" style="opacity:0.01;width:800px;height:600px"></iframe>`)
    })
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    otherPort = (other.address() as { port: number }).port
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS })
  })

  after(async () => {
    await browser?.close()
    for (const server of [dsh, other]) {
      server?.closeAllConnections()
      await new Promise((resolve) => server?.close(resolve))
    }
  })

  it('the panel offers no action (no login, no buttons) when DSH\'s page is framed by another origin (clickjacking)', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`http://127.0.0.1:${otherPort}/`)
      const frame = page.frames().find((f) => f.url() === `http://127.0.0.1:${dshPort}/`)!
      await frame.waitForFunction('!!globalThis.TW')
      const state = await frame.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's1')
        for (let i = 0; i < 30 && !store.state.view && !store.state.error; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return store.state
      })
      expect(state.view?.actions ?? [], `framed panel state: ${JSON.stringify(state)}; grants: ${grants.join(', ')}`).to.deep.equal([])
    } finally {
      await page.close()
    }
  })

  it('stays read-only when framed after the user logged in at the top level (the Strict cookie goes with a same-site frame)', async () => {
    const context = await browser.newContext()
    try {
      const top = await context.newPage()
      await top.goto(`http://127.0.0.1:${dshPort}/`)
      const own = await top.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's1')
        for (let i = 0; i < 30 && !store.state.view; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return store.state
      })
      expect(own.view?.actions?.map((a: { id: string }) => a.id), 'DSH in its own tab acts').to.deep.equal(['approve'])
      grants.length = 0
      const page = await context.newPage()
      await page.goto(`http://127.0.0.1:${otherPort}/`)
      const frame = page.frames().find((f) => f.url() === `http://127.0.0.1:${dshPort}/`)!
      await frame.waitForFunction('!!globalThis.TW')
      const state = await frame.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's1')
        for (let i = 0; i < 30 && !store.state.view && !store.state.error; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        await store.command({ id: 'approve', command: '/task approve t@3' })
        return store.state
      })
      expect(state.framed).to.equal(true)
      expect(state.view, 'the view, read-only').to.deep.equal({ actions: [] })
      expect(state.outcome?.body?.code, 'a click is refused in the page').to.equal('FRAMED')
      expect(grants, 'no grant asked from the frame').to.deep.equal([])
    } finally {
      await context.close()
    }
  })
})

describe('review-b: trusted hosts are matched as DSH matches them', () => {
  it('an IPv6 trusted host with a port is that port only (DSH: exact authority), not any port', () => {
    expect(isTrustedHost('[fd00::1]:8080', ['[fd00::1]:8080'])).to.equal(true)
    expect(isTrustedHost('[fd00::1]:3000', ['[fd00::1]:8080'])).to.equal(false)
  })
})

describe('review-b: the panel\'s cookie (a real DshConnectionContract; a restart draws a new random operator token)', function () {
  this.timeout(60_000)
  let server: Server
  let port: number
  let browser: Browser
  let contract: DshConnectionContract
  let storeJs = ''
  const ctx = new Context()

  function start() {
    let route: ((req: any, res: any) => void) | undefined
    const web = { register: (r: { handler(req: any, res: any): void }) => { route = r.handler; return () => {} } }
    contract = new DshConnectionContract(ctx, web as any, '/taskward', undefined, () => port, ['dsh.test'])
    contract.mount()
    contract.register({ path: '/api/console/sessions/:sessionId/view', methods: ['GET'], access: 'operator', handler: () => Response.json({ actions: [] }) })
    contract.register({ path: '/api/console/sessions/:sessionId/events', methods: ['GET'], access: 'operator', handler: () => new Response('retry: 60000\nevent: ready\ndata: {}\n\n', { headers: { 'content-type': 'text/event-stream' } }) })
    return route!
  }

  before(async () => {
    storeJs = await bundlePanelStore()
    let route = start()
    server = createServer((req, res) => {
      if (req.url === '/restart') { route = start(); res.end('restarted'); return }
      if (req.url === '/') { res.writeHead(200, { 'content-type': 'text/html' }); res.end('<!doctype html><title>dsh</title><script src="/store.js"></script>'); return }
      if (req.url === '/store.js') { res.writeHead(200, { 'content-type': 'text/javascript' }); res.end(storeJs); return }
      route(req, res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS })
  })

  after(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  it('a login link opened after a restart logs the console in, though the panel\'s older cookie is still in the browser', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`http://127.0.0.1:${port}/`)
      expect(await page.evaluate(() => fetch('/taskward/panel/grant', { method: 'POST' }).then((r) => r.status))).to.equal(204)
      await page.evaluate(() => fetch('/restart').then((r) => r.text()))
      // `/task console` answers a login link; it sets the cookie at Path=/ and opens the console.
      await page.goto(contract.loginUrl)
      const status = await page.evaluate(() => fetch('/taskward/api/console/sessions/s1/view').then((r) => r.status))
      expect(status, `cookies the browser holds: ${JSON.stringify((await page.context().cookies()).map((c) => `${c.name}@${c.path}`))}`).to.equal(200)
    } finally {
      await page.close()
    }
  })

  it('an open panel logs in again after a restart instead of showing UNAUTHORIZED until a reload', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`http://127.0.0.1:${port}/`)
      const before = await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's2')
        for (let i = 0; i < 50 && !store.state.view; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return store.state
      })
      expect(before.view, 'the panel before the restart').to.deep.equal({ actions: [] })
      await page.evaluate(() => fetch('/restart').then((r) => r.text()))
      const state = await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's2')
        await store.load()
        return store.state
      })
      expect(state.error, `the panel after a DSH restart: ${JSON.stringify(state.error)}`).to.equal(undefined)
    } finally {
      await page.close()
    }
  })

  it('marks the panel\'s cookie Secure when DSH\'s page is served over https (a trusted host behind TLS)', async () => {
    const setCookie = await new Promise<string[]>((resolve, reject) => {
      const req = request(`http://127.0.0.1:${port}/taskward/panel/grant`, {
        method: 'POST', headers: { host: 'dsh.test', origin: 'https://dsh.test', 'sec-fetch-site': 'same-origin', 'content-length': '0' },
      }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.headers['set-cookie'] ?? []))
      })
      req.on('error', reject)
      req.end()
    })
    expect(setCookie, 'the grant answered a cookie').to.have.length(1)
    expect(setCookie[0]!.split(';').map((part) => part.trim().toLowerCase()), setCookie[0]).to.include('secure')
  })
})

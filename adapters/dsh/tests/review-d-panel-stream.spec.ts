import { expect } from 'chai'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { build } from 'esbuild'
import { chromium, type Browser } from 'playwright-core'

/*
 * Review-d (71d9223, the panel's store): a stream DSH refuses is reopened only through a view read that
 * succeeds. When DSH is briefly unreachable behind a reverse proxy (a restart: the proxy answers 502
 * for a few seconds) the browser's EventSource gets an HTTP error and gives up, the one view read two
 * seconds later gets the same 502 — and nothing ever tries again: the open panel stays not live with
 * an error until the user reloads, though DSH has been back for long. Real Chromium, a real HTTP
 * server, the panel's real store code (bundled by esbuild).
 */
describe('review-d: the panel\'s stream after DSH was unreachable for a few seconds (proxy 502)', function () {
  this.timeout(60_000)
  let server: Server
  let port: number
  let browser: Browser
  const outage = { until: 0 }
  let endStream: (() => void) | undefined
  let storeJs = ''

  before(async () => {
    const bundled = await build({
      entryPoints: [join(import.meta.dirname, '..', 'client', 'store.ts')],
      bundle: true, write: false, format: 'iife', globalName: 'TW', platform: 'browser', target: 'es2022', logLevel: 'warning',
    })
    storeJs = bundled.outputFiles[0]!.text
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end('<!doctype html><html><head><title>dsh</title><script src="/store.js"></script></head><body></body></html>')
      } else if (url.pathname === '/store.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' })
        res.end(storeJs)
      } else if (Date.now() < outage.until) {
        // The reverse proxy while DSH restarts.
        res.writeHead(502, { 'content-type': 'text/html' })
        res.end('<h1>502 Bad Gateway</h1>')
      } else if (url.pathname === '/taskward/panel/grant') {
        res.writeHead(204)
        res.end()
      } else if (url.pathname.endsWith('/view')) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ session: { seq: 3 } }))
      } else if (url.pathname.endsWith('/events')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
        res.write('retry: 300\nevent: ready\ndata: {"seq":2}\n\n')
        endStream = () => res.end()
      } else {
        res.writeHead(404)
        res.end()
      }
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] })
  })

  after(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  it('is live again once DSH answers again, without a reload', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`http://127.0.0.1:${port}/`)
      expect(await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's1')
        store.subscribe(() => {})
        for (let i = 0; i < 50 && !store.state.live; i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return store.state.live
      }), 'live before the outage').to.equal(true)
      // DSH goes away for 4 s: the stream drops, its reconnect and the panel's view read get the proxy's 502.
      outage.until = Date.now() + 4000
      endStream!()
      await new Promise((resolve) => setTimeout(resolve, 4000))
      // DSH is back. Give the panel 10 s (five of its 2-s retry intervals).
      const after = await page.evaluate(async () => {
        const store = (globalThis as any).TW.storeFor('/taskward', 's1')
        for (let i = 0; i < 100 && !(store.state.live && !store.state.error); i++) await new Promise((resolve) => setTimeout(resolve, 100))
        return { live: store.state.live, error: store.state.error }
      })
      expect(after.live, `the panel 10 s after DSH is back: ${JSON.stringify(after)}`).to.equal(true)
      expect(after.error, 'its error').to.equal(undefined)
    } finally {
      await page.close()
    }
  })
})

import { expect } from 'chai'
import type { Context } from 'cordis'
import { TestHost } from '@taskward/testkit'

/** An event stream that writes as long as it is read: a live view's stream, in short. */
const streamPlugin = {
  name: 'test-endless-stream',
  inject: ['connection'],
  apply(ctx: Context) {
    ctx.connection.register({
      path: '/api/operator/endless',
      methods: ['GET'],
      access: 'operator',
      handler: () => {
        let timer: NodeJS.Timeout | undefined
        const chunk = new TextEncoder().encode(`data: ${'x'.repeat(64 * 1024)}\n\n`)
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            timer = setInterval(() => {
              try {
                controller.enqueue(chunk)
              } catch {
                clearInterval(timer)
              }
            }, 2)
          },
          cancel: () => clearInterval(timer),
        })
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
      },
    })
  },
}

describe('host: connection, a client that goes away mid-stream', function () {
  this.timeout(20_000)
  let host: TestHost
  const printed: string[] = []
  const original = console.error
  beforeEach(async () => {
    host = await TestHost.boot()
    host.ctx.plugin(streamPlugin)
    printed.length = 0
    console.error = (...args: unknown[]) => {
      printed.push(args.map(String).join(' '))
    }
  })
  afterEach(async () => {
    console.error = original
    await host.dispose()
  })

  it('is the client leaving, not an error printed to stderr (EPIPE / ECONNRESET at a write)', async () => {
    for (let round = 0; round < 20; round++) {
      const abort = new AbortController()
      const response = await host.http.fetch('/api/operator/endless', { signal: abort.signal } as any)
      expect(response.status).to.equal(200)
      const reader = response.body!.getReader()
      await reader.read()
      abort.abort()
      await reader.cancel().catch(() => {})
      await new Promise((resolve) => setTimeout(resolve, 30))
    }
    expect(printed.filter((line) => /EPIPE|ECONNRESET|ECANCELED|aborted/.test(line))).to.deep.equal([])
  })
})

import { expect } from 'chai'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import type { AddressInfo } from 'node:net'
import { Logger } from 'cordis'
import { OpenAIMock, TestHost, mockText, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { InlineTransport, type ModelTransport } from '../src/transport'
import { WorkerTransport } from '../src/worker-transport'
import { redact } from '../src/redact'
import { KEY, runTurn } from './helpers'

/*
 * What an endpoint (broken or hostile) can send, against both transports: each holds what the SDK on
 * the host's thread holds.
 */

const quiet = { warn() {}, debug() {} }

/** A chunk the assembler reads as usual, with a field it ignores nested `depth` deep (valid JSON, a few KB). */
const deepChunk = (content: string, depth = 6000) =>
  `data: {"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}],"x":${'['.repeat(depth)}${']'.repeat(depth)}}\n\n`
const textChunk = (content: string) => `data: {"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]}\n\n`

/** A loopback endpoint answering every request with `answer`; its base URL and a close. */
async function endpoint(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const server: Server = createServer((req, res) => {
    req.resume()
    answer(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/** Within `ms`, the value; else 'hung'. */
const within = <T>(ms: number, promise: Promise<T>) => Promise.race([promise, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms))])

for (const transport of ['worker', 'inline'] as const) describe(`plugin-openai: a hostile endpoint (${transport} transport)`, function () {
  this.timeout(30_000)
  const carrierOf = (baseURL: string, maxRetries = 0): ModelTransport => {
    const route = { route: 'mock', apiKey: KEY, baseURL, timeoutMs: 10_000, maxRetries }
    return transport === 'inline' ? new InlineTransport(route, quiet) : new WorkerTransport(route, quiet)
  }
  /** A stream opened and its first chunk read: the reader then stops (the host busy elsewhere). */
  const firstChunkRead = async (carrier: ModelTransport, signal: AbortSignal) => {
    const stream = await carrier.open({ body: { model: 'm', messages: [], stream: true }, signal, refused: {} })
    const chunks = stream[Symbol.asyncIterator]()
    await chunks.next()
    return chunks
  }

  it('a chunk with a field nested 6,000 deep is answered like any other (the field is ignored)', async () => {
    const server = await endpoint((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(deepChunk('hello') + 'data: [DONE]\n\n')
    })
    const host = await TestHost.boot({ plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: server.baseURL, apiKey: KEY, model: 'mock-1', timeoutMs: 1000, maxRetries: 0 }], transport }]] })
    const cwd = await tempWorkspace({ 'a.txt': 'alpha\n' })
    try {
      const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
      const result = await within(8000, runTurn(host, agent, 'hi'))
      expect(result, 'the turn ended').to.not.equal('hung')
      if (result === 'hung') return
      expect(result.summary.error).to.equal(undefined)
      expect(result.events.filter((event) => event.type === 'assistant/message').map((event) => event.data.text)).to.deep.equal(['hello'])
    } finally {
      await host.dispose()
      await server.close()
      await removeTree(cwd)
    }
  })

  it('an endpoint that streams faster than the host reads is held back: it cannot pile its answer up in the host', async () => {
    const written = { bytes: 0 }
    const content = 'x'.repeat(1000)
    const server = await endpoint((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const pump = () => {
        while (written.bytes < 64 * 1024 * 1024) {
          const line = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
          written.bytes += line.length
          if (!res.write(line)) return void res.once('drain', pump)
        }
        res.end('data: [DONE]\n\n')
      }
      pump()
    })
    const carrier = carrierOf(server.baseURL)
    const abort = new AbortController()
    try {
      const chunks = await firstChunkRead(carrier, abort.signal)
      // The host is busy elsewhere: nothing more is read for a while.
      await new Promise((resolve) => setTimeout(resolve, 2000))
      expect(written.bytes, 'bytes the endpoint could push ahead of a reader that stopped').to.be.below(16 * 1024 * 1024)
      // And it goes on once the reader does.
      let more = 0
      for (let i = 0; i < 10_000; i++) {
        const { done } = await chunks.next()
        if (done) break
        more++
      }
      expect(more).to.equal(10_000)
    } finally {
      abort.abort()
      carrier.close()
      await server.close()
    }
  })

  it('a cancel ends the stream at once: nothing buffered is handed out after the abort', async () => {
    const line = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x'.repeat(1000) } }] })}\n\n`
    const server = await endpoint((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(line.repeat(3000)) // ~3 MB, then silence
    })
    const carrier = carrierOf(server.baseURL)
    const abort = new AbortController()
    try {
      const chunks = await firstChunkRead(carrier, abort.signal)
      // The host busy elsewhere: the stream arrives meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 1000))
      abort.abort()
      let after = 0
      for (;;) {
        const { done } = await chunks.next().catch(() => ({ done: true }))
        if (done) break
        after++
      }
      expect(after, 'chunks handed out after the abort').to.be.below(100)
    } finally {
      carrier.close()
      await server.close()
    }
  })

  it('the endpoint sees the same request from either transport: headers and body, first attempt and retry', async () => {
    const mock = await OpenAIMock.start()
    const carrier = carrierOf(mock.baseURL, 1)
    try {
      mock.script({ kind: 'status', status: 500, message: 'once' }, mockText('hi'))
      const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }
      const stream = await carrier.open({ body, signal: new AbortController().signal, refused: {} })
      for await (const _ of stream);
      expect(mock.requests).to.have.length(2)
      for (const [attempt, request] of mock.requests.entries()) {
        expect(request.body, `attempt ${attempt}`).to.deep.equal(body)
        expect(request.headers).to.include({ authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'x-stainless-retry-count': String(attempt) })
        expect(request.headers).to.not.have.property('x-taskward-step')
      }
    } finally {
      carrier.close()
      await mock.close()
    }
  })

  it('a malformed chunk that echoes the key is logged, scrubbed, and the step ends MODEL_UNAVAILABLE without the key', async () => {
    const server = await endpoint((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(`data: not json, echoing Bearer ${KEY} and ${KEY}\n\n`)
    })
    const records: string[] = []
    const target: Logger.Target = { record: (record) => { records.push(`${record.type} ${record.content}`) }, levels: { base: 3 } }
    Logger.targets.push(target)
    const host = await TestHost.boot({ plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: server.baseURL, apiKey: KEY, model: 'mock-1', timeoutMs: 2000, maxRetries: 0 }], transport }]] })
    const cwd = await tempWorkspace({ 'a.txt': 'alpha\n' })
    try {
      const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
      const { summary } = await runTurn(host, agent, 'hi')
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
      expect(summary.error?.message).to.not.include(KEY)
      expect(records.filter((line) => line.includes('Could not parse')), 'the SDK\'s notice reached the host log').to.have.length.above(0)
      expect(records.join('\n')).to.not.include(KEY)
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
      await host.dispose()
      await server.close()
      await removeTree(cwd)
    }
  })
})

describe('plugin-openai: the route\'s thread against a hostile endpoint', function () {
  this.timeout(30_000)

  it('what the SDK prints past its logger (an SSE thread.* event it cannot parse, echoing the key) reaches the log scrubbed, never stderr', async () => {
    const server = await endpoint((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(`event: thread.message\ndata: not json, echoing Bearer ${KEY} and ${KEY}\n\n`)
    })
    const printed: string[] = []
    const logged: string[] = []
    const realWrite = process.stderr.write
    process.stderr.write = function (this: any, chunk: any, ...rest: any[]) {
      printed.push(String(chunk))
      return (realWrite as any).call(this, String(chunk).split(KEY).join('[the test hid the key]'), ...rest)
    } as any
    const carrier = new WorkerTransport({ route: 'mock', apiKey: KEY, baseURL: server.baseURL, timeoutMs: 10_000, maxRetries: 0 },
      { warn: (text) => logged.push(redact(text, KEY)), debug: (text) => logged.push(redact(text, KEY)) })
    try {
      const stream = await carrier.open({ body: { model: 'm', messages: [], stream: true }, signal: new AbortController().signal, refused: {} })
      let failure: unknown
      try {
        for await (const _ of stream);
      } catch (error) {
        failure = error
      }
      expect(failure, 'the request fails').to.be.instanceOf(Error)
      // A thread's stderr reaches the process's asynchronously.
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(printed.join(''), 'stderr').to.not.include(KEY)
      expect(logged.join('\n')).to.include('Could not parse message into JSON').and.not.include(KEY)
    } finally {
      process.stderr.write = realWrite
      carrier.close()
      await server.close()
    }
  })

  it('one session\'s chunk nested too deep to cross threads costs another session on the route none of its text', async () => {
    const responses: ServerResponse[] = []
    const server = await endpoint((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.flushHeaders()
      responses.push(res)
    })
    const carrier = new WorkerTransport({ route: 'mock', apiKey: KEY, baseURL: server.baseURL, timeoutMs: 5000, maxRetries: 0 }, quiet)
    try {
      const body = { model: 'm', messages: [], stream: true }
      const good = await carrier.open({ body, signal: new AbortController().signal, refused: {} })
      const bad = await carrier.open({ body, signal: new AbortController().signal, refused: {} })
      const read = async (stream: AsyncIterable<any>) => {
        let text = ''
        try {
          for await (const chunk of stream) text += chunk.choices?.[0]?.delta?.content ?? ''
          return text
        } catch (error) {
          return `${text} [threw ${(error as Error).message}]`
        }
      }
      const goodText = read(good)
      const badText = read(bad)
      // Both answers written in the same turns of the endpoint's loop, one piece each; at 10, 30,000 deep.
      const [first, second] = responses
      for (let i = 0; i < 20; i++) {
        first.write(textChunk(`${i},`))
        second.write(i === 10 ? deepChunk('poison', 30_000) : textChunk('.'))
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      first.end('data: [DONE]\n\n')
      second.end('data: [DONE]\n\n')
      const texts = await within(10_000, Promise.all([goodText, badText]))
      expect(texts, 'both reads ended').to.not.equal('hung')
      expect((texts as string[])[0], 'the other session\'s text, whole').to.equal(Array.from({ length: 20 }, (_, i) => `${i},`).join(''))
    } finally {
      carrier.close()
      await server.close()
    }
  })

  describe('a thread that cannot be started', () => {
    const threads = createRequire(import.meta.url)('node:worker_threads')
    const RealWorker = threads.Worker
    let mock: OpenAIMock | undefined
    let host: TestHost | undefined
    let cwd: string | undefined

    afterEach(async () => {
      threads.Worker = RealWorker
      syncBuiltinESMExports()
      await host?.dispose()
      await mock?.close()
      if (cwd) await removeTree(cwd)
    })

    it('fails the steps it would carry (MODEL_UNAVAILABLE, logged); once threads can be made again, the route answers', async () => {
      // `new Worker` throws at once when no thread can be made: ERR_WORKER_INIT_FAILED (a process or
      // cgroup thread limit at that moment), ERR_ACCESS_DENIED under --permission.
      threads.Worker = class { constructor() { throw Object.assign(new Error('ERR_WORKER_INIT_FAILED: EAGAIN'), { code: 'ERR_WORKER_INIT_FAILED' }) } }
      syncBuiltinESMExports()
      const records: string[] = []
      const target: Logger.Target = { record: (record) => { records.push(`${record.type} ${record.content}`) }, levels: { base: 3 } }
      Logger.targets.push(target)
      try {
        mock = await OpenAIMock.start()
        host = await TestHost.boot({
          plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'mock-1', timeoutMs: 2000, maxRetries: 0 }] }]],
        })
        cwd = await tempWorkspace({ 'a.txt': 'alpha\n' })
        const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
        const refused = await runTurn(host, agent, 'first')
        expect(refused.summary.error?.code).to.equal('MODEL_UNAVAILABLE')
        expect(refused.summary.error?.message).to.include('ERR_WORKER_INIT_FAILED').and.include('transport: inline')
        expect(records.some((line) => line.includes('could not start its thread')), 'the failed start is logged').to.equal(true)
        threads.Worker = RealWorker
        syncBuiltinESMExports()
        mock.script(mockText('answered'))
        const { summary, events } = await runTurn(host, agent, 'second')
        expect(summary.error).to.equal(undefined)
        expect(events.find((event) => event.type === 'assistant/message')?.data.text).to.equal('answered')
      } finally {
        Logger.targets.splice(Logger.targets.indexOf(target), 1)
      }
    })
  })
})

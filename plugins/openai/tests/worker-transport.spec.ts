import { expect } from 'chai'
import { threadId } from 'node:worker_threads'
import type { Agent } from '@taskward/host'
import { OpenAIMock, TestHost, mockText, removeTree, tempWorkspace } from '@taskward/testkit'
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, BadRequestError, RateLimitError } from 'openai'
import * as OpenAIPlugin from '../src'
import { errorOf } from '../src/worker-transport'
import { KEY, runTurn, until } from './helpers'

/** The route's thread (worker-transport.ts keeps it private: these tests end it from outside). */
const threadOf = (host: TestHost) => (host.ctx.models.get('mock') as any).transport.worker as import('node:worker_threads').Worker | undefined

describe('plugin-openai: the worker transport', function () {
  this.timeout(20_000)
  let mock: OpenAIMock
  let host: TestHost
  let cwd: string
  let agent: Agent

  beforeEach(async () => {
    mock = await OpenAIMock.start()
    host = await TestHost.boot({
      plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'mock-1', timeoutMs: 2000, maxRetries: 0 }] }]],
    })
    cwd = await tempWorkspace({ 'a.txt': 'alpha\n' })
    agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
  })

  afterEach(async () => {
    await host.dispose()
    await mock.close()
    await removeTree(cwd)
  })

  it('is the default: the request leaves from a thread of its own, never from the host thread\'s fetch', async () => {
    const realFetch = globalThis.fetch
    let fetched = 0
    globalThis.fetch = ((...args: Parameters<typeof fetch>) => {
      fetched++
      return realFetch(...args)
    }) as typeof fetch
    try {
      mock.script(mockText('from the thread'))
      const { summary, events } = await runTurn(host, agent, 'hi')
      expect(summary.error).to.equal(undefined)
      expect(events.find((event) => event.type === 'assistant/message')?.data.text).to.equal('from the thread')
    } finally {
      globalThis.fetch = realFetch
    }
    expect(fetched, 'the host thread fetched nothing').to.equal(0)
    const thread = threadOf(host)
    expect(thread, 'the route runs a thread').to.not.equal(undefined)
    expect(thread!.threadId).to.not.equal(threadId)
    expect(mock.requests).to.have.length(1)
  })

  it('a thread that dies mid-answer ends that step MODEL_UNAVAILABLE; the next step starts another thread and is answered', async () => {
    mock.script({ kind: 'stall', text: 'partial' })
    const turn = runTurn(host, agent, 'first')
    await until(() => mock.requests.length === 1, 'the first request')
    const first = threadOf(host)!
    await first.terminate()
    const { summary } = await turn
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(summary.error?.message).to.match(/thread exited/)
    mock.script(mockText('second answer'))
    const again = await runTurn(host, agent, 'second')
    expect(again.summary.error).to.equal(undefined)
    expect(again.events.find((event) => event.type === 'assistant/message')?.data.text).to.equal('second answer')
    expect(threadOf(host)).to.not.equal(first)
  })

  it('the plugin\'s dispose ends its thread, and a step in flight ends at once', async () => {
    mock.script({ kind: 'stall', text: 'partial' })
    const turn = runTurn(host, agent, 'hi')
    await until(() => mock.requests.length === 1, 'the request')
    const thread = threadOf(host)!
    const exited = new Promise<number>((resolve) => thread.once('exit', resolve))
    const started = Date.now()
    host.ctx.registry.delete(OpenAIPlugin as any)
    await exited
    const { summary } = await turn
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(summary.error?.message).to.include('the model route was stopped (its plugin was disposed)')
    expect(Date.now() - started, 'well before the route\'s 2 s timeout').to.be.below(1500)
    await until(() => mock.requests[0].aborted, 'the endpoint to see the request closed')
  })
})

describe('plugin-openai: SDK errors across the thread', () => {
  it('a status error comes back of its SDK class, with its status, body, code and message unchanged', () => {
    const error = errorOf({ kind: 'status', status: 400, error: JSON.stringify({ message: 'too long', code: 'context_length_exceeded' }), message: '400 too long', headers: [['x-request-id', 'r1']] })
    expect(error).to.be.instanceOf(BadRequestError)
    expect(error).to.include({ status: 400, code: 'context_length_exceeded', message: '400 too long' })
    expect((error as APIError).error).to.deep.equal({ message: 'too long', code: 'context_length_exceeded' })
    expect((error as APIError).requestID).to.equal('r1')
    expect(errorOf({ kind: 'status', status: 429, message: '429 slow down', headers: [] })).to.be.instanceOf(RateLimitError)
  })

  it('an error the stream sent (no status) stays an APIError, not a connection error', () => {
    const error = errorOf({ kind: 'status', error: JSON.stringify({ message: 'overloaded' }), message: 'overloaded' })
    expect(error).to.be.instanceOf(APIError)
    expect(error).to.not.be.instanceOf(APIConnectionError)
    expect(error.message).to.equal('overloaded')
  })

  it('connection failures, timeouts, aborts and anything else keep their kind', () => {
    expect(errorOf({ kind: 'connection', message: 'Connection error.', timeout: false })).to.be.instanceOf(APIConnectionError)
    expect(errorOf({ kind: 'connection', message: 'Request timed out.', timeout: true })).to.be.instanceOf(APIConnectionTimeoutError)
    expect(errorOf({ kind: 'abort' })).to.be.instanceOf(APIUserAbortError)
    const other = errorOf({ kind: 'other', name: 'SyntaxError', message: 'Unexpected token' })
    expect(other).to.not.be.instanceOf(APIError)
    expect(other).to.include({ name: 'SyntaxError', message: 'Unexpected token' })
  })
})

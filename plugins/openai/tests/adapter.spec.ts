import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { Agent, TurnSummary } from '@taskward/host'
import { TaskwardError, type SessionEvent } from '@taskward/protocol'
import { OpenAIMock, TestHost, mockText, mockTools, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, runTurn, until } from './helpers'


const ofType = (events: readonly SessionEvent[], type: string) => events.filter((e) => e.type === type)

// Every behaviour below holds whichever thread runs the SDK (config `transport`).
for (const transport of ['worker', 'inline'] as const) describe(`plugin-openai: the adapter against a loopback endpoint (${transport} transport)`, function () {
  this.timeout(20_000)
  let mock: OpenAIMock
  let host: TestHost
  let cwd: string
  let agent: Agent
  const savedKey = process.env.OPENAI_API_KEY

  beforeEach(async () => {
    delete process.env.OPENAI_API_KEY
    mock = await OpenAIMock.start()
    host = await TestHost.boot({
      plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'mock-1', timeoutMs: 400, maxRetries: 2 }], transport }]],
    })
    cwd = await tempWorkspace({ 'a.txt': 'alpha\n' })
    agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
  })

  afterEach(async () => {
    if (savedKey === undefined) delete process.env.OPENAI_API_KEY
    else process.env.OPENAI_API_KEY = savedKey
    await host.dispose()
    await mock.close()
    await removeTree(cwd)
  })

  it('streams text: each delta reaches agent/text-delta, the whole text is recorded once, usage from the last chunk', async () => {
    mock.script(mockText('Hello from a streamed model answer.', { chunkSize: 5, usage: { prompt_tokens: 120, completion_tokens: 9 } }))
    const { summary, deltas, events } = await runTurn(host, agent, 'say hello')
    expect(summary.error).to.equal(undefined)
    expect(deltas.length).to.be.greaterThan(3)
    expect(deltas.join('')).to.equal('Hello from a streamed model answer.')
    expect(ofType(events, 'assistant/message').map((e) => e.data.text)).to.deep.equal(['Hello from a streamed model answer.'])
    expect(ofType(events, 'model/usage').map((e) => e.data)).to.deep.equal([{ route: 'mock', step: 0, promptTokens: 120, completionTokens: 9 }])
    const [request] = mock.requests
    expect(request.body).to.include({ model: 'mock-1', stream: true })
    expect(request.body.stream_options).to.deep.equal({ include_usage: true })
    expect(request.headers.authorization).to.equal(`Bearer ${KEY}`)
    expect(request.body.messages[0].role).to.equal('system')
    expect(request.body.messages.at(-1)).to.deep.equal({ role: 'user', content: 'say hello' })
    const write = request.body.tools.find((t: any) => t.function.name === 'write')
    expect(write.function.parameters).to.deep.equal({
      type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'],
    })
  })

  it('assembles tool-call arguments split across chunks, runs the calls and shows the results on the next step', async () => {
    mock.script(
      { ...mockTools(['write', { path: 'b.txt', content: 'bravo' }], ['read', { path: 'a.txt' }]), argPieces: 7 },
      mockText('wrote b.txt'),
    )
    const { summary, events } = await runTurn(host, agent, 'write b')
    expect(summary.toolCalls).to.deep.equal(['write', 'read'])
    expect(await readFile(join(cwd, 'b.txt'), 'utf8')).to.equal('bravo')
    const calls = ofType(events, 'tool/call')
    expect(calls.map((e) => e.data.modelCallId)).to.deep.equal(['call_1_0', 'call_1_1'])
    const second = mock.requests[1].body.messages
    const assistant = second.find((m: any) => m.role === 'assistant' && m.tool_calls)
    expect(assistant.tool_calls.map((c: any) => [c.function.name, JSON.parse(c.function.arguments)])).to.deep.equal([
      ['write', { path: 'b.txt', content: 'bravo' }], ['read', { path: 'a.txt' }],
    ])
    const tools = second.filter((m: any) => m.role === 'tool')
    expect(tools.map((m: any) => m.tool_call_id)).to.deep.equal(assistant.tool_calls.map((c: any) => c.id))
    expect(JSON.parse(tools[1].content).result.content ?? JSON.parse(tools[1].content).result).to.satisfy((r: any) => JSON.stringify(r).includes('alpha'))
  })

  it('arguments that are not JSON become TOOL_INVALID_ARGS the model sees next step; nothing runs', async () => {
    mock.script(
      mockTools({ name: 'write', args: '{"path": "c.txt", "content": "x"' }),
      mockTools({ name: 'write', args: '[1, 2]' }),
      mockText('sorry'),
    )
    const { summary, events } = await runTurn(host, agent, 'write c')
    expect(summary.error).to.equal(undefined)
    expect(existsSync(join(cwd, 'c.txt'))).to.equal(false)
    const results = ofType(events, 'tool/result')
    expect(results.map((e) => e.data.error?.code)).to.deep.equal(['TOOL_INVALID_ARGS', 'TOOL_INVALID_ARGS'])
    expect(ofType(events, 'tool/call').map((e) => e.data.args)).to.deep.equal([{}, {}])
    const seen = mock.requests[1].body.messages.filter((m: any) => m.role === 'tool')
    expect(JSON.parse(seen[0].content).error.code).to.equal('TOOL_INVALID_ARGS')
    expect(ofType(events, 'assistant/message').map((e) => e.data.text)).to.deep.equal(['sorry'])
  })

  it('retries a 429 after its Retry-After, then succeeds', async () => {
    mock.script({ kind: 'status', status: 429, retryAfter: '1' }, mockText('ok after waiting'))
    const { summary, events } = await runTurn(host, agent, 'hi')
    expect(summary.error).to.equal(undefined)
    expect(mock.requests).to.have.length(2)
    // The retry waited at least what Retry-After asked (a lower bound: never flaky on a slow machine).
    expect(mock.requests[1].receivedAt - mock.requests[0].receivedAt).to.be.at.least(950)
    expect(ofType(events, 'assistant/message')[0].data.text).to.equal('ok after waiting')
  })

  it('a 500 is retried maxRetries times, then the turn ends as agent/error MODEL_UNAVAILABLE', async () => {
    mock.script(...Array(3).fill({ kind: 'status', status: 500, message: `upstream broke (key ${KEY})` }))
    const { summary, events } = await runTurn(host, agent, 'hi')
    expect(mock.requests).to.have.length(3)
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    const [error] = ofType(events, 'agent/error')
    expect(error.data.code).to.equal('MODEL_UNAVAILABLE')
    expect(error.data.message).to.include('500').and.not.include(KEY)
    expect(agent.state).to.equal('idle')
  })

  it('a 401 that quotes the key masked (as OpenAI does: its first and last characters) shows neither part', async () => {
    const masked = `${KEY.slice(0, 8)}${'*'.repeat(20)}${KEY.slice(-4)}`
    mock.script({ kind: 'status', status: 401, message: `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.` })
    const { summary, events } = await runTurn(host, agent, 'hi')
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    const [error] = ofType(events, 'agent/error')
    expect(error.data.message).to.include('401').and.include('refused the API key')
    expect(error.data.message).to.not.include(KEY.slice(-4)).and.not.include(KEY.slice(0, 8)).and.not.include('****')
  })

  it('a stream that stalls ends at timeoutMs as MODEL_UNAVAILABLE, and the request is closed', async () => {
    mock.script({ kind: 'stall', text: 'partial' })
    const { summary, deltas } = await runTurn(host, agent, 'hi')
    expect(deltas.join('')).to.equal('partial')
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(summary.error?.message).to.match(/sent nothing for 400 ms/)
    await until(() => mock.requests[0].aborted)
  })

  it('a connection reset ends the turn cleanly as MODEL_UNAVAILABLE after the retries', async () => {
    mock.script({ kind: 'reset' }, { kind: 'reset' }, { kind: 'reset' })
    const { summary, events } = await runTurn(host, agent, 'hi')
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(ofType(events, 'agent/error')).to.have.length(1)
    expect(mock.requests).to.have.length(3)
  })

  it('agent.cancel() aborts the HTTP request at once; the turn ends cancelled, not as an error', async () => {
    mock.script({ kind: 'stall' })
    let summary: TurnSummary | undefined
    host.ctx.on('agent/turn-end', (_, s) => { summary = s })
    // A long stall timeout so that only the cancel can end it.
    const slow = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
    ;(host.ctx.models.get('mock') as any).config.timeoutMs = 60_000
    slow.followup('hi')
    await until(() => mock.requests.length === 1)
    slow.cancel()
    await until(() => mock.requests[0].aborted, 'the mock to see the abort', 2000)
    await until(() => !!summary)
    expect(summary!.cancelled).to.equal(true)
    expect(summary!.error).to.equal(undefined)
    expect(ofType(await slow.session.read(), 'agent/error')).to.have.length(0)
  })

  it('a very large answer arrives whole; reasoning_content is not recorded', async () => {
    const big = 'lorem ipsum '.repeat(20_000)
    mock.script(mockText(big, { chunkSize: 997, reasoning: 'secret chain of thought '.repeat(500) }))
    const { events, deltas } = await runTurn(host, agent, 'write a lot')
    expect(ofType(events, 'assistant/message')[0].data.text).to.equal(big)
    expect(deltas.join('')).to.equal(big)
    expect(JSON.stringify(events)).to.not.include('chain of thought')
  })

  it('an answer past maxStepChars is stopped: MODEL_UNAVAILABLE, the request closed, nothing half-recorded', async () => {
    ;(host.ctx.models.get('mock') as any).context.maxStepChars = 5000
    mock.script(mockText('x'.repeat(50_000), { chunkSize: 1000, delayMs: 1 }))
    const { summary, events } = await runTurn(host, agent, 'write forever')
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(summary.error?.message).to.match(/passed 5000 characters \(maxStepChars\)/)
    expect(ofType(events, 'assistant/message')).to.have.length(0)
    await until(() => mock.requests[0].aborted, 'the mock to see the request closed')
  })

  it('a completed stream is left as it is: the request it read to the end is not aborted afterwards', async () => {
    // Aborting a finished request only woke the SDK's and undici's listeners (an error with a stack,
    // a DOMException, a stream cancel) on every step; cancels, stalls and failures still abort (above).
    // On the host's thread the fetch's signal is watched; the thread of a worker transport is only ever
    // told to abort by a message, and no message of the kind may follow a complete answer.
    const signals: AbortSignal[] = []
    const told: unknown[] = []
    const realFetch = globalThis.fetch
    const realPost = Worker.prototype.postMessage
    globalThis.fetch = ((url: any, init?: any) => {
      if (init?.signal) signals.push(init.signal)
      return realFetch(url, init)
    }) as typeof fetch
    Worker.prototype.postMessage = function (this: Worker, message: unknown, ...rest: any[]) {
      told.push(message)
      return realPost.call(this, message, ...rest)
    }
    try {
      mock.script(mockText('done.', { usage: { prompt_tokens: 50, completion_tokens: 2 } }))
      const { summary, events } = await runTurn(host, agent, 'finish')
      expect(summary.error).to.equal(undefined)
      expect(ofType(events, 'assistant/message').map((e) => e.data.text)).to.deep.equal(['done.'])
      await new Promise((resolve) => setTimeout(resolve, 50))
    } finally {
      globalThis.fetch = realFetch
      Worker.prototype.postMessage = realPost
    }
    if (transport === 'inline') {
      expect(signals).to.have.length(1)
      expect(signals[0].aborted).to.equal(false)
    } else {
      expect(signals, 'the host thread fetched nothing: the request went from the route\'s thread').to.have.length(0)
      // The request, with the new texts its thread counts once it is sent; nothing after it.
      expect(told.map((message: any) => Object.keys(message).sort().join(','))).to.deep.equal(['body,count,id'])
    }
  })

  it('the plugin\'s dispose ends a step in flight at once, saying the route was stopped', async () => {
    mock.script({ kind: 'stall', text: 'partial' })
    ;(host.ctx.models.get('mock') as any).config.timeoutMs = 10_000
    const turn = runTurn(host, agent, 'hi')
    await until(() => mock.requests.length === 1, 'the request')
    const started = Date.now()
    host.ctx.registry.delete(OpenAIPlugin as any)
    const { summary } = await turn
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(summary.error?.message).to.include('the model route was stopped (its plugin was disposed)')
    expect(Date.now() - started, 'well before the stall timer').to.be.below(3000)
    await until(() => mock.requests[0].aborted, 'the endpoint to see the request closed')
  })

  it('the next step sees a bounded context, never the whole log', async () => {
    // Words, not one long run: a real tokenizer counts `xxxx…` at 8 characters a token.
    for (let i = 0; i < 60; i++) await agent.session.append('user/message', { text: `old ${i} ${'lorem ipsum dolor sit amet, '.repeat(72)}` })
    mock.script(mockText('fine'))
    await runTurn(host, agent, 'latest')
    const body = JSON.stringify(mock.requests[0].body.messages)
    expect(body.length).to.be.lessThan(24_000 * 4 * 1.1)
    expect(body).to.include('latest').and.include('old 59').and.not.include('old 0 ')
    expect(body).to.match(/conversation entries before seq \d+ are not shown/)
  })
})

describe('plugin-openai: configuration', () => {
  let host: TestHost
  const savedKey = process.env.OPENAI_API_KEY
  before(async () => { host = await TestHost.boot() })
  after(async () => {
    if (savedKey === undefined) delete process.env.OPENAI_API_KEY
    else process.env.OPENAI_API_KEY = savedKey
    await host.dispose()
  })
  beforeEach(() => { delete process.env.OPENAI_API_KEY })

  const load = (config: any) => {
    const fork = host.ctx.plugin({ name: 'openai-under-test', inject: OpenAIPlugin.inject, apply: (ctx: any) => OpenAIPlugin.apply(ctx, config) })
    return fork
  }

  it('a route without a key refuses at load with CONFIG_INVALID naming the route', () => {
    let thrown: unknown
    try {
      OpenAIPlugin.apply(host.ctx, OpenAIPlugin.Config({ routes: [{ route: 'nokey', baseURL: 'http://127.0.0.1:1/v1' }] } as any))
    } catch (error) {
      thrown = error
    }
    expect(TaskwardError.is(thrown, 'CONFIG_INVALID')).to.equal(true)
    expect((thrown as Error).message).to.include('"nokey"').and.include('OPENAI_API_KEY')
    expect(host.ctx.models.routes()).to.not.include('nokey')
  })

  it('with requireKey false, a keyless route stays off: no routes, no failure', async () => {
    const fork = load({ routes: [{ route: 'quiet' }], requireKey: false })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(host.ctx.models.routes()).to.deep.equal(['scripted'])
    fork.dispose()
  })

  it('reads the key from OPENAI_API_KEY and registers the route and the role route', async () => {
    process.env.OPENAI_API_KEY = KEY
    const fork = load({ routes: [{ route: 'env', baseURL: 'http://127.0.0.1:1/v1' }] })
    await until(() => host.ctx.models.routes().includes('openai'))
    expect(host.ctx.models.routes()).to.include.members(['env', 'openai'])
    fork.dispose()
    await until(() => !host.ctx.models.routes().includes('env'))
  })

  it('a role naming an unknown route refuses with CONFIG_INVALID', () => {
    expect(() => OpenAIPlugin.apply(host.ctx, OpenAIPlugin.Config({ routes: [{ route: 'r', apiKey: 'k' }], roles: { reviewer: 'nope' } } as any)))
      .to.throw(/roles.reviewer names route "nope"/)
  })
})


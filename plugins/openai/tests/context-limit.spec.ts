import { expect } from 'chai'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { diagnose } from '@taskward/host'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { TestHost, mockText, taskPlayer, type MockDialect } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, runTurn, until } from './helpers'
import { bootRoute, history, ofType, useRig } from './loopback'

describe('plugin-openai: context limits against a loopback endpoint', function () {
  this.timeout(30_000)
  const rig = useRig()

  for (const dialect of ['openai', 'deepseek', 'vllm', 'vllm-nested', 'llamacpp'] as const) {
    it(`a ${dialect} context-length refusal is learned from: the step is retried once with a window that fits`, async () => {
      // The limit of the vLLM refusal; the route is configured far larger.
      rig.mock.context = { tokens: 4552, dialect }
      rig.host = await bootRoute(rig.mock, { contextTokens: 24000 })
      const agent = await rig.agent()
      await history(agent, 60)
      rig.mock.script(mockText('fits now'))
      const { summary, events } = await runTurn(rig.host, agent, 'what next?')
      expect(summary.error).to.equal(undefined)
      expect(ofType(events, 'assistant/message').map((e) => e.data.text)).to.deep.equal(['fits now'])
      expect(rig.mock.requests).to.have.length(2)
      expect(rig.mock.requests[0].promptTokens).to.be.greaterThan(4552)
      expect(rig.mock.requests[1].promptTokens).to.be.at.most(4552)
      const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
      expect(route.describeContext()).to.match(/learned/)
      // The input stays; what was dropped is named.
      const sent = JSON.stringify(rig.mock.requests[1].body.messages)
      expect(sent).to.include('what next?').and.match(/conversation entries before seq \d+ are not shown/)
    })
  }

  it('a refusal again after the retry ends the turn MODEL_CONTEXT_EXCEEDED naming the limit and the request size', async () => {
    rig.mock.context = { tokens: 4552, dialect: 'vllm' }
    rig.host = await bootRoute(rig.mock, { contextTokens: 24000 })
    const agent = await rig.agent()
    await history(agent, 60)
    // The endpoint refuses whatever it is sent (a server that reserves more than it says).
    rig.mock.context = undefined
    const refusal = { kind: 'status' as const, status: 400, body: { object: 'error', message: "This model's maximum context length is 4552 tokens. However, you requested 6793 tokens (6793 in the messages, 0 in the completion).", type: 'BadRequestError', code: 400 } }
    rig.mock.script(refusal, refusal)
    const { summary, events } = await runTurn(rig.host, agent, 'go on')
    expect(summary.error?.code).to.equal('MODEL_CONTEXT_EXCEEDED')
    expect(summary.error?.message).to.match(/limit 4552 tokens/).and.match(/request 6793 tokens/).and.not.match(/no body/)
    expect(rig.mock.requests).to.have.length(2)
    expect(ofType(events, 'agent/error').map((e) => e.data.code)).to.deep.equal(['MODEL_CONTEXT_EXCEEDED'])
  })

  it('an error whose SDK message is empty shows the endpoint\'s body, redacted and cut (vLLM\'s flat 404)', async () => {
    rig.host = await bootRoute(rig.mock, { contextTokens: 24000 })
    const agent = await rig.agent()
    rig.mock.script({ kind: 'status', status: 404, body: { object: 'error', message: `The model \`qwen\` does not exist (key ${KEY}). ${'x'.repeat(2000)}`, type: 'NotFoundError', code: 404 } })
    const { summary } = await runTurn(rig.host, agent, 'hi')
    expect(summary.error?.code).to.equal('MODEL_UNAVAILABLE')
    expect(summary.error?.message).to.match(/answered 404: The model `qwen` does not exist/).and.not.match(/no body/)
    expect(summary.error?.message).to.not.include(KEY)
    expect(summary.error!.message.length).to.be.lessThan(800)
    // The step id the route's fetch uses to keep the body never reaches the endpoint.
    expect(rig.mock.requests[0].headers).to.not.have.property('x-taskward-step')
  })

  it('Ollama\'s silent cut is detected: a coded warning in the log, and the next request fits its num_ctx', async () => {
    rig.mock.context = { tokens: 2048, dialect: 'ollama' }
    rig.host = await bootRoute(rig.mock, { contextTokens: 24000 })
    const agent = await rig.agent()
    await history(agent, 40)
    rig.mock.script(mockText('one'), mockText('two'))
    const first = await runTurn(rig.host, agent, 'first')
    expect(rig.mock.requests[0].truncated).to.equal(true)
    const warnings = ofType(first.events, 'model/warning')
    expect(warnings.map((e) => e.data.code)).to.deep.equal(['MODEL_CONTEXT_TRUNCATED'])
    expect(warnings[0].data.message).to.match(/num_ctx/)
    await runTurn(rig.host, agent, 'second')
    expect(rig.mock.requests[1].truncated).to.equal(undefined)
    expect(rig.mock.requests[1].promptTokens).to.be.at.most(2048)
  })

  it('discovers the context from vLLM\'s /v1/models and Ollama\'s /api/show when contextTokens is not configured', async () => {
    rig.mock.context = { tokens: 8192, dialect: 'vllm', discoverable: true, model: 'qwen2.5-coder' }
    rig.host = await bootRoute(rig.mock)
    const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    await route.prepare()
    expect(route.describeContext()).to.match(/^context 6144 prompt tokens \(8192 discovered \(.*\/models max_model_len\)\)/)
    // `npm run doctor` (the host's findings) prints it.
    const finding = (await diagnose(rig.host.ctx)).find((f) => f.check === 'model route mock')
    expect(finding?.detail).to.match(/8192 discovered/)
    await rig.host.dispose()
    rig.mock.context = { tokens: 8192, dialect: 'ollama', discoverable: true }
    rig.host = await bootRoute(rig.mock)
    const ollama = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    await ollama.prepare()
    expect(ollama.describeContext()).to.match(/8192 discovered \(.*\/api\/show num_ctx\)/)
    // Configured wins: nothing is asked.
    await rig.host.dispose()
    rig.host = await bootRoute(rig.mock, { contextTokens: 16000 })
    const configured = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    await configured.prepare()
    expect(configured.describeContext()).to.match(/^context 16000 prompt tokens \(context\.contextTokens\)/)
  })

  it('reads OpenRouter\'s context_length, and an endpoint that does not answer discovers nothing within the timeout', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/silent/v1/models') return // never answers
      res.writeHead(req.url === '/v1/models' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(req.url === '/v1/models' ? JSON.stringify({ data: [{ id: 'openai/gpt-4o', context_length: 128000 }] }) : '{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    try {
      expect(await OpenAIPlugin.discoverContext({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'openai/gpt-4o', apiKey: KEY }))
        .to.deep.equal({ tokens: 128000, source: `http://127.0.0.1:${port}/v1/models context_length` })
      expect(await OpenAIPlugin.discoverContext({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'other', apiKey: KEY })).to.equal(undefined)
      expect(await OpenAIPlugin.discoverContext({ baseURL: `http://127.0.0.1:${port}/silent/v1`, model: 'x', apiKey: KEY, timeoutMs: 200 })).to.equal(undefined)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('records the cached prompt tokens the endpoint reports (OpenAI/vLLM and DeepSeek fields) in model/usage', async () => {
    for (const dialect of ['vllm', 'deepseek'] as MockDialect[]) {
      rig.mock.context = { tokens: 100_000, dialect }
      rig.host = await bootRoute(rig.mock, { contextTokens: 24000 })
      const agent = await rig.agent()
      rig.mock.script(mockText('a'), mockText('b'))
      await runTurn(rig.host, agent, 'one')
      const { events } = await runTurn(rig.host, agent, 'two')
      const [usage] = ofType(events, 'model/usage')
      expect(usage.data.cachedTokens, dialect).to.be.greaterThan(0.8 * usage.data.promptTokens)
      expect(usage.data.cachedTokens).to.be.below(usage.data.promptTokens)
      await rig.host.dispose()
      rig.mock.reset()
    }
  })

  it('when the turn cannot fit at all, the turn ends MODEL_CONTEXT_EXCEEDED and the task pauses, nothing lost', async () => {
    rig.mock.context = { tokens: 1200, dialect: 'openai' }
    rig.mock.fallback = taskPlayer()
    rig.host = await TestHost.boot({
      plugins: [
        [SupervisorPlugin, { reviewerModel: 'scripted', automaticContinuation: true }],
        [OpenAIPlugin, { routes: [{ route: 'mock', baseURL: rig.mock.baseURL, apiKey: KEY, model: 'qwen', maxRetries: 0 }], context: { contextTokens: 24000 } }],
      ],
      waitFor: ['supervisor'],
    })
    await until(() => rig.host.ctx.models.routes().includes('openai'))
    const { session, agent } = await (rig.host.ctx as any).supervisor.startSession({ cwd: rig.cwd, model: 'openai' })
    await rig.host.ctx.commands.input(session, '/task new write a and b')
    await until(async () => (await (rig.host.ctx as any).supervisor.state(session)).current?.phase === 'paused', 'the pause')
    await agent.whenIdle()
    const events = await session.read({ from: 0, limit: 1000 })
    const errors = ofType(events, 'agent/error')
    expect(errors.map((e) => e.data.code)).to.deep.equal(['MODEL_CONTEXT_EXCEEDED'])
    expect(errors[0].data.message).to.match(/holds \d+/).and.match(/\/task resume/)
    // One refused request, then no second one: the rebuilt window could not hold the turn.
    expect(rig.mock.requests).to.have.length(1)
    const task = (await (rig.host.ctx as any).supervisor.state(session)).current
    expect(task.resumePhase).to.equal('planning')
    // The task says why it is paused (task schema 11), so the console and /task status can tell the user.
    expect(task.pauseReason).to.equal('model-context')
  })
})

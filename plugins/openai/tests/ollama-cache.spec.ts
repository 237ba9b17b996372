import { expect } from 'chai'
import type { Agent } from '@taskward/host'
import type { SessionEvent } from '@taskward/protocol'
import { OpenAIMock, TestHost, mockText, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, runTurn, until } from './helpers'

const ofType = (events: readonly SessionEvent[], type: string) => events.filter((e) => e.type === type)

/** `count` old exchanges of plain prose (≈ 150 tokens each) in the session. */
async function history(agent: Agent, count: number) {
  for (let i = 0; i < count; i++) {
    await agent.session.append('user/message', { text: `question ${i}: ${'how does the scheduler pick the next ready node in the plan? '.repeat(5)}` })
    await agent.session.append('assistant/message', { text: `answer ${i}: ${'it takes the first node whose dependencies have all passed review. '.repeat(5)}` })
  }
}

/** A long input (≈ 1,800 tokens) unlike anything before it: none of it is in the endpoint's cache. */
const buildLog = (tag: string) => Array.from({ length: 120 }, (_, i) => `${tag} line ${i}: the compiler reported warning W${i * 7 + 3} in module m${i}.`).join('\n')

/**
 * Ollama builds whose prompt_eval_count leaves out the KV-cache hit (ollama#2068, #16414) report, on a
 * cache-stable layout, only what is new in a request: that is no silent cut, and no calibration sample.
 */
describe('plugin-openai: an Ollama that counts only the uncached prompt', function () {
  this.timeout(30_000)
  let mock: OpenAIMock
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    mock = await OpenAIMock.start()
    cwd = await tempWorkspace()
    mock.context = { tokens: 8192, dialect: 'ollama', promptCount: 'uncached' }
    host = await TestHost.boot({
      plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'qwen2.5-coder', maxRetries: 0 }], context: { contextTokens: 7000 } }]],
    })
    await until(() => host.ctx.models.routes().includes('mock'))
  })
  afterEach(async () => {
    await host?.dispose()
    await mock.close()
    await removeTree(cwd)
  })

  it('a cache hit counted as a small prompt is not taken for a cut: no warning, the context is not learned down', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
    await history(agent, 20)
    mock.script(mockText('one'), mockText('two'), mockText('three'))
    await runTurn(host, agent, 'first')
    // Only the new input (≈ 1,800 tokens) is evaluated: the rest was served from the cache.
    const second = await runTurn(host, agent, buildLog('a'))
    const [usage] = ofType(second.events, 'model/usage')
    expect(usage.data.promptTokens).to.be.below(0.6 * mock.requests[1].promptTokens!)
    expect(ofType(second.events, 'model/warning')).to.deep.equal([])
    const route = host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.describeContext()).to.not.match(/learned/)
    const third = await runTurn(host, agent, 'third')
    expect(third.summary.error).to.equal(undefined)
    // The window still holds the whole session (≈ 5,500 tokens), as the route's 7,000 allow.
    expect(mock.requests[2].promptTokens).to.be.greaterThan(5000)
  })

  it('a new session\'s first request, whose head (instructions, tools) another session sent, is no cut either', async () => {
    // A head about the size of the host's real tool schemas (~3,000 tokens with the instructions).
    for (let i = 0; i < 4; i++) {
      host.ctx.tools.register({ name: `bench_tool_${i}`, description: Array.from({ length: 40 }, (_, j) => `Rule ${j} of tool ${i}: cite the evidence seq of each claim.`).join(' '), execute: () => 'ok' })
    }
    const first = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
    mock.script(mockText('one'), mockText('two'))
    await runTurn(host, first, 'hello')
    // A second session of the same role and workspace (as each review is): its head is in the cache.
    const second = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
    const { events } = await runTurn(host, second, buildLog('b'))
    const [usage] = ofType(events, 'model/usage')
    expect(usage.data.promptTokens).to.be.below(0.6 * mock.requests[1].promptTokens!)
    expect(ofType(events, 'model/warning')).to.deep.equal([])
    const route = host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.describeContext()).to.not.match(/learned/)
  })

  it('small cache-hit counts do not calibrate the estimate down (it would then send more than the context holds)', async () => {
    const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
    await history(agent, 20)
    for (let i = 0; i < 6; i++) {
      mock.script(mockText(`answer ${i}`))
      await runTurn(host, agent, `step ${i}`)
    }
    const route = host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.counter.ratio).to.be.within(0.8, 1.3)
  })
})

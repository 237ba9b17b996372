import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { OpenAIMock, TestHost, mockText, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, runTurn, until } from './helpers'

const ofType = (events: readonly SessionEvent[], type: string) => events.filter((e) => e.type === type)

/** What a hostile (or broken) endpoint reports as usage: it must poison neither the budget nor the estimate. */
describe('plugin-openai: reported usage is the endpoint\'s word, checked', function () {
  this.timeout(30_000)
  let mock: OpenAIMock
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    mock = await OpenAIMock.start()
    cwd = await tempWorkspace()
    host = await TestHost.boot({
      plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'qwen2.5-coder', maxRetries: 0 }], context: { contextTokens: 24000 } }]],
    })
    await until(() => host.ctx.models.routes().includes('mock'))
  })
  afterEach(async () => {
    await host?.dispose()
    await mock.close()
    await removeTree(cwd)
  })

  for (const [what, usage] of [
    ['negative counts', { prompt_tokens: -5000, completion_tokens: -1_000_000_000_000 }],
    ['counts as strings', { prompt_tokens: '90000', completion_tokens: '7' }],
    ['fractions', { prompt_tokens: 0.5, completion_tokens: 1.5 }],
    ['a count past 2^53', { prompt_tokens: 1e300, completion_tokens: 3 }],
    ['a prompt of 10^12 tokens for a request of a few hundred', { prompt_tokens: 1e12, completion_tokens: 3 }],
  ] as const) {
    it(`${what}: the step is charged the estimate (marked estimated), never a count below zero; the calibration is untouched`, async () => {
      const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
      mock.script(mockText('fine', { usage: usage as any }))
      const { events } = await runTurn(host, agent, 'hello')
      const [recorded] = ofType(events, 'model/usage')
      expect(recorded.data.estimated).to.equal(true)
      expect(recorded.data.promptTokens).to.be.a('number').and.greaterThan(0)
      expect(Number.isSafeInteger(recorded.data.promptTokens)).to.equal(true)
      expect(recorded.data.completionTokens).to.be.a('number').and.at.least(0)
      expect(OpenAIPlugin.usageTokens(recorded.data)).to.be.greaterThan(0)
      const route = host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
      expect(route.counter.ratio).to.equal(1)
    })
  }
})

import { expect } from 'chai'
import { mockText } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { runTurn } from './helpers'
import { bootRoute, ofType, useRig } from './loopback'

/** What a hostile (or broken) endpoint reports as usage: it must poison neither the budget nor the estimate. */
describe('plugin-openai: reported usage is the endpoint\'s word, checked', function () {
  this.timeout(30_000)
  const rig = useRig({ boot: (mock) => bootRoute(mock, { contextTokens: 24000 }) })

  for (const [what, usage] of [
    ['negative counts', { prompt_tokens: -5000, completion_tokens: -1_000_000_000_000 }],
    ['counts as strings', { prompt_tokens: '90000', completion_tokens: '7' }],
    ['fractions', { prompt_tokens: 0.5, completion_tokens: 1.5 }],
    ['a count past 2^53', { prompt_tokens: 1e300, completion_tokens: 3 }],
    ['a prompt of 10^12 tokens for a request of a few hundred', { prompt_tokens: 1e12, completion_tokens: 3 }],
  ] as const) {
    it(`${what}: the step is charged the estimate (marked estimated), never a count below zero; the calibration is untouched`, async () => {
      const agent = await rig.agent()
      rig.mock.script(mockText('fine', { usage: usage as any }))
      const { events } = await runTurn(rig.host, agent, 'hello')
      const [recorded] = ofType(events, 'model/usage')
      expect(recorded.data.estimated).to.equal(true)
      expect(recorded.data.promptTokens).to.be.a('number').and.greaterThan(0)
      expect(Number.isSafeInteger(recorded.data.promptTokens)).to.equal(true)
      expect(recorded.data.completionTokens).to.be.a('number').and.at.least(0)
      expect(OpenAIPlugin.usageTokens(recorded.data)).to.be.greaterThan(0)
      const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
      expect(route.counter.ratio).to.equal(1)
    })
  }
})

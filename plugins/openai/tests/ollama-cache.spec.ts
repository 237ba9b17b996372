import { expect } from 'chai'
import { mockText } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { runTurn } from './helpers'
import { bootRoute, history, ofType, useRig } from './loopback'

/** A long input (≈ 1,800 tokens) unlike anything before it: none of it is in the endpoint's cache. */
const buildLog = (tag: string) => Array.from({ length: 120 }, (_, i) => `${tag} line ${i}: the compiler reported warning W${i * 7 + 3} in module m${i}.`).join('\n')

/**
 * Ollama builds whose prompt_eval_count leaves out the KV-cache hit (ollama#2068, #16414) report, on a
 * cache-stable layout, only what is new in a request: that is no silent cut, and no calibration sample.
 */
describe('plugin-openai: an Ollama that counts only the uncached prompt', function () {
  this.timeout(30_000)
  const rig = useRig({
    mock: (mock) => { mock.context = { tokens: 8192, dialect: 'ollama', promptCount: 'uncached' } },
    boot: (mock) => bootRoute(mock, { contextTokens: 7000 }),
  })

  it('a cache hit counted as a small prompt is not taken for a cut: no warning, the context is not learned down', async () => {
    const agent = await rig.agent()
    await history(agent, 20)
    rig.mock.script(mockText('one'), mockText('two'), mockText('three'))
    await runTurn(rig.host, agent, 'first')
    // Only the new input (≈ 1,800 tokens) is evaluated: the rest was served from the cache.
    const second = await runTurn(rig.host, agent, buildLog('a'))
    const [usage] = ofType(second.events, 'model/usage')
    expect(usage.data.promptTokens).to.be.below(0.6 * rig.mock.requests[1].promptTokens!)
    expect(ofType(second.events, 'model/warning')).to.deep.equal([])
    const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.describeContext()).to.not.match(/learned/)
    const third = await runTurn(rig.host, agent, 'third')
    expect(third.summary.error).to.equal(undefined)
    // The window still holds the whole session (≈ 5,500 tokens), as the route's 7,000 allow.
    expect(rig.mock.requests[2].promptTokens).to.be.greaterThan(5000)
  })

  it('a new session\'s first request, whose head (instructions, tools) another session sent, is no cut either', async () => {
    // A head about the size of the host's real tool schemas (~3,000 tokens with the instructions).
    for (let i = 0; i < 4; i++) {
      rig.host.ctx.tools.register({ name: `bench_tool_${i}`, description: Array.from({ length: 40 }, (_, j) => `Rule ${j} of tool ${i}: cite the evidence seq of each claim.`).join(' '), execute: () => 'ok' })
    }
    const first = await rig.agent()
    rig.mock.script(mockText('one'), mockText('two'))
    await runTurn(rig.host, first, 'hello')
    // A second session of the same role and workspace (as each review is): its head is in the cache.
    const second = await rig.agent()
    const { events } = await runTurn(rig.host, second, buildLog('b'))
    const [usage] = ofType(events, 'model/usage')
    expect(usage.data.promptTokens).to.be.below(0.6 * rig.mock.requests[1].promptTokens!)
    expect(ofType(events, 'model/warning')).to.deep.equal([])
    const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.describeContext()).to.not.match(/learned/)
  })

  it('small cache-hit counts do not calibrate the estimate down (it would then send more than the context holds)', async () => {
    const agent = await rig.agent()
    await history(agent, 20)
    for (let i = 0; i < 6; i++) {
      rig.mock.script(mockText(`answer ${i}`))
      await runTurn(rig.host, agent, `step ${i}`)
    }
    const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.counter.ratio).to.be.within(0.8, 1.3)
  })
})

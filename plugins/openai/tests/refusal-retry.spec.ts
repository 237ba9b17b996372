import { expect } from 'chai'
import { mockText, type MockReply, type MockRequest } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { runTurn } from './helpers'
import { bootRoute, history, useRig } from './loopback'

/**
 * An endpoint whose tokenizer counts twice what the route estimates (a small-vocabulary model, a heavy
 * chat template): its refusal names the real size, and the retry must be sized by it, not resent alike.
 */
describe('plugin-openai: a refusal that names a request larger than the estimate', function () {
  this.timeout(30_000)
  const rig = useRig({
    // Large enough that the mock itself refuses nothing: it only counts (record.promptTokens).
    mock: (mock) => { mock.context = { tokens: 1_000_000, dialect: 'vllm' } },
    boot: (mock) => bootRoute(mock, { contextTokens: 24000 }),
  })

  it('the retry is calibrated by the size the endpoint named, so it fits', async () => {
    const agent = await rig.agent()
    await history(agent, 40)
    // A step first: the calibration has a sample of its own (the mock counts close to the estimate).
    rig.mock.script(mockText('hello'))
    await runTurn(rig.host, agent, 'hello')
    rig.mock.requests.length = 0
    let limit = 0
    // This endpoint counts 2× the mock's count; its context is 1.5× the mock's count of the first request.
    const endpoint = (request: MockRequest): MockReply => {
      const counted = request.promptTokens! * 2
      limit ||= Math.ceil(request.promptTokens! * 1.5)
      if (counted <= limit) return mockText('fits now')
      return { kind: 'status', status: 400, body: {
        object: 'error', type: 'BadRequestError', code: 400,
        message: `This model's maximum context length is ${limit} tokens. However, you requested ${counted} tokens (${counted} in the messages, 0 in the completion). Please reduce the length of the messages or completion.`,
      } }
    }
    rig.mock.script(endpoint, endpoint)
    const { summary } = await runTurn(rig.host, agent, 'what next?')
    expect(summary.error?.message).to.equal(undefined)
    expect(rig.mock.requests).to.have.length(2)
    expect(rig.mock.requests[1].promptTokens! * 2).to.be.at.most(limit)
  })

  it('a refusal naming a context no turn fits in (1 token) is not learned: the route is not shut for every later step', async () => {
    const agent = await rig.agent()
    await history(agent, 5)
    const lie = { kind: 'status' as const, status: 400, body: { error: { code: 'context_length_exceeded', type: 'invalid_request_error', message: "This model's maximum context length is 1 tokens. However, your messages resulted in 900 tokens." } } }
    rig.mock.script(lie, mockText('answered on the retry'), mockText('and the next turn'))
    const first = await runTurn(rig.host, agent, 'one')
    expect(first.summary.error?.message).to.equal(undefined)
    const second = await runTurn(rig.host, agent, 'two')
    expect(second.summary.error?.message).to.equal(undefined)
    expect(rig.mock.requests).to.have.length(3)
    const route = rig.host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    expect(route.describeContext()).to.not.match(/learned/)
  })
})

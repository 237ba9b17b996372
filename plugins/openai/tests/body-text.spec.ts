import { expect } from 'chai'
import { bodyText } from '../src/body-text'

describe('bodyText', () => {
  const tools = [{ type: 'function', function: { name: 'write', description: 'Writes a file "quoted" \u2028', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }]
  const system = { role: 'system', content: 'You are an agent.\nUnicode: 日本語 😀 \ud800 lone surrogate' }
  const call = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'write', arguments: '{"path":"a"}' } }] }
  const result = { role: 'tool', tool_call_id: 'c1', content: 'ok', extra: undefined }

  it('is exactly JSON.stringify(body), step after step with the same message objects and new ones', () => {
    const steps = [
      { model: 'm', tools, stream: true, stream_options: { include_usage: true }, messages: [system] },
      { model: 'm', tools, stream: true, stream_options: { include_usage: true }, temperature: 0.2, messages: [system, call, result] },
      { model: 'm', stream: true, max_tokens: undefined, messages: [system, call, result, { role: 'user', content: '[host: task state]\n{"a":1}' }] },
      { model: 'm', tools: [], messages: [] },
    ]
    for (const body of steps) expect(bodyText(body)).to.equal(JSON.stringify(body))
    // Odd shapes are serialized whole, still exactly.
    const odd = [{ messages: [system], model: 'm' }, { model: 'm', messages: 'not a list' }, { model: 'm', messages: [null, undefined, 3, 'text', () => 1] }, { model: 'm', tools: 'x', messages: [] }]
    for (const body of odd) expect(bodyText(body as any)).to.equal(JSON.stringify(body))
  })

  it('throws where JSON.stringify throws (a body that cannot be serialized fails its step)', () => {
    expect(() => bodyText({ model: 1n, messages: [] } as any)).to.throw(TypeError)
    expect(() => bodyText({ model: 'm', messages: [{ role: 'user', content: 2n }] } as any)).to.throw(TypeError)
  })
})

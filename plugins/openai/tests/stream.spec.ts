import { expect } from 'chai'
import { StepAssembler, type StreamChunk } from '../src'

const part = (p: { index?: number, id?: string, name?: string, args?: string }): StreamChunk => ({
  choices: [{ index: 0, delta: { tool_calls: [{ index: p.index as number, ...(p.id ? { id: p.id } : {}), function: { ...(p.name ? { name: p.name } : {}), ...(p.args ? { arguments: p.args } : {}) } }] } }],
})

/** Tool-call assembly against endpoints that do not number their calls as OpenAI does. */
describe('stream assembly: tool-call indexes', () => {
  it('keeps OpenAI\'s numbered calls apart, arguments split across chunks', () => {
    const assembler = new StepAssembler({ reasoningChars: 0 })
    for (const chunk of [part({ index: 0, id: 'c0', name: 'read', args: '{"pa' }), part({ index: 1, id: 'c1', name: 'glob', args: '{}' }), part({ index: 0, args: 'th":"a"}' })]) assembler.push(chunk)
    expect(assembler.finish().toolCalls).to.deep.equal([
      { id: 'c0', name: 'read', args: { path: 'a' } },
      { id: 'c1', name: 'glob', args: {} },
    ])
  })

  it('a new call id at an index already in use is a new call (Ollama sends index 0 for every call)', () => {
    const assembler = new StepAssembler({ reasoningChars: 0 })
    for (const chunk of [
      part({ index: 0, id: 'a', name: 'write', args: '{"path":"hello.py",' }),
      part({ index: 0, args: '"content":"print(1)"}' }),
      part({ index: 0, id: 'b', name: 'write', args: '{"path":"world.py","content":"print(2)"}' }),
    ]) assembler.push(chunk)
    expect(assembler.finish().toolCalls).to.deep.equal([
      { id: 'a', name: 'write', args: { path: 'hello.py', content: 'print(1)' } },
      { id: 'b', name: 'write', args: { path: 'world.py', content: 'print(2)' } },
    ])
  })

  it('calls without any index (older Ollama, some proxies) are told apart by their ids', () => {
    const assembler = new StepAssembler({ reasoningChars: 0 })
    for (const chunk of [part({ id: 'x', name: 'read', args: '{"path":"a"}' }), part({ id: 'y', name: 'read', args: '{"path":"b"}' })]) assembler.push(chunk)
    expect(assembler.finish().toolCalls?.map((c) => [c.id, c.args])).to.deep.equal([['x', { path: 'a' }], ['y', { path: 'b' }]])
  })
})

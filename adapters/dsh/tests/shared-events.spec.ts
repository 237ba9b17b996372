import { expect } from 'chai'
import { viewEvent } from '../src/session-view'

/*
 * DSH's message and tool events in Taskward's shape (shared-events.ts), as DSH rc.8 writes them
 * (packages/core/agent-loop/src/tool-calls.ts, agent.ts; packages/llm/llm/src/message.ts).
 */
describe('DSH adapter: shared event types in Taskward\'s shape', () => {
  const call = { type: 'tool/call', seq: 7, time: 1, data: { turn: 1, step: 2, callId: 'c1', name: 'read', arguments: { file_path: '/w/a.txt' } } }
  const result = (content: unknown[], isError = false, extra: Record<string, unknown> = {}) => ({
    type: 'tool/result', seq: 8, time: 2, sourceEventSeqs: [7],
    data: { turn: 1, step: 2, message: { id: 'm', role: 'user', source: { kind: 'tool', callId: 'c1' }, content: [{ type: 'tool-result', toolCallId: 'c1', content, isError }] }, ...extra },
  })
  const at = (seq: number) => seq === 7 ? call : undefined

  it('a tool result names its call\'s tool and carries the text the agent read; an error carries its code', () => {
    expect(viewEvent(result([{ type: 'text', text: '1\ta done' }]), 's', at).data).to.deep.equal({ callId: 'c1', name: 'read', result: '1\ta done' })
    expect(viewEvent(result([{ type: 'text', text: 'Error: FORBIDDEN: no' }], true, { error: { name: 'ToolError', code: 'DENIED' } }), 's', at).data)
      .to.deep.equal({ callId: 'c1', name: 'read', error: { code: 'DENIED', message: 'Error: FORBIDDEN: no' } })
    expect(viewEvent(call, 's').data).to.deep.equal({ callId: 'c1', name: 'read', args: { file_path: '/w/a.txt' } })
  })

  it('names no tool when the linked seq is not that call (a forged or foreign link), and messages carry their text only', () => {
    const other = (seq: number) => seq === 7 ? { ...call, data: { ...call.data, callId: 'c2', name: 'write' } } : undefined
    expect(viewEvent(result([{ type: 'text', text: 'x' }]), 's', other).data).to.deep.equal({ callId: 'c1', result: 'x' })
    expect(viewEvent(result([{ type: 'text', text: 'x' }]), 's').data).to.deep.equal({ callId: 'c1', result: 'x' })
    const user = { type: 'user/message', seq: 1, time: 0, data: { id: 'u', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'hi' }, { type: 'image', data: '…' }] } }
    expect(viewEvent(user, 's')).to.deep.include({ type: 'user/message', data: { text: 'hi' } })
    // Taskward's own follow-ups carry their origin (a controller turn is not a person's message).
    const followup = { type: 'user/message', seq: 4, time: 0, data: { id: 'f', role: 'user', source: { kind: 'plugin', plugin: 'taskward', origin: 'controller' }, content: [{ type: 'text', text: 'go on' }] } }
    expect(viewEvent(followup, 's').data).to.deep.equal({ text: 'go on', origin: 'controller' })
    const foreign = { ...followup, data: { ...followup.data, source: { kind: 'plugin', plugin: 'other', origin: 'controller' } } }
    // Another plugin's message (DSH's repeat-tool-reminder) is no person's: it carries origin plugin.
    expect(viewEvent(foreign, 's').data).to.deep.equal({ text: 'go on', origin: 'plugin' })
    const person = { ...followup, data: { ...followup.data, source: { kind: 'user' } } }
    expect(viewEvent(person, 's').data).to.deep.equal({ text: 'go on' })
    const assistant = { type: 'assistant/message', seq: 2, time: 0, data: { turn: 1, step: 1, message: { content: [{ type: 'text', text: 'a' }, { type: 'tool-call', id: 'c1' }, { type: 'text', text: 'b' }] } } }
    expect(viewEvent(assistant, 's').data).to.deep.equal({ text: 'a\nb' })
    expect(viewEvent({ type: 'turn/start', seq: 3, time: 0, data: { turn: 1 } }, 's')).to.deep.include({ type: 'dsh:turn/start', data: { turn: 1 } })
  })

  it('a Taskward tool\'s result (its meta marker) is the value it returned again, as on our host; any other stays text', () => {
    const value = { taskId: 't1', nodeId: 'a', reported: true }
    const text = JSON.stringify(value, null, 2)
    expect(viewEvent(result([{ type: 'text', text }], false, { meta: { taskwardResult: true } }), 's', at).data)
      .to.deep.equal({ callId: 'c1', name: 'read', result: value })
    // Without the marker (DSH's own tools, another plugin's), JSON text is what the agent read: text.
    expect(viewEvent(result([{ type: 'text', text }]), 's', at).data).to.deep.equal({ callId: 'c1', name: 'read', result: text })
    // A marker on text that is not a JSON object keeps the text.
    expect(viewEvent(result([{ type: 'text', text: '[1]' }], false, { meta: { taskwardResult: true } }), 's', at).data).to.deep.include({ result: '[1]' })
    expect(viewEvent(result([{ type: 'text', text: 'not json' }], false, { meta: { taskwardResult: true } }), 's', at).data).to.deep.include({ result: 'not json' })
  })

  it('a tool call carries its whole arguments as an object, as on our host (DSH logs the streamed JSON text)', () => {
    const logged = (args: unknown) => viewEvent({ type: 'tool/call', seq: 4, time: 0, data: { turn: 1, step: 1, callId: 'c9', name: 'write', arguments: args } }, 's').data
    expect(logged('{"file_path":"/w/a.txt","content":"a done\\n"}')).to.deep.equal({ callId: 'c9', name: 'write', args: { file_path: '/w/a.txt', content: 'a done\n' } })
    // Text that is not a JSON object (a model's broken arguments) stays the text it was.
    expect(logged('{"file_path":')).to.deep.include({ args: '{"file_path":' })
    expect(logged('[1]')).to.deep.include({ args: '[1]' })
  })
})

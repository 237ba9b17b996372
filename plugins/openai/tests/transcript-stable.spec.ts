import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { eventsToGroups } from '../src/transcript'
import { bodyText } from '../src/body-text'

let seq = 0
const ev = (type: string, data: any): SessionEvent => ({ seq: seq++, type, time: 0, data })

describe('eventsToGroups: the same messages step after step', () => {
  const window = () => [
    ev('user/message', { text: 'write a', origin: 'user' }),
    ev('assistant/message', { text: 'writing' }),
    ev('tool/call', { callId: 'c1', name: 'write', args: { path: 'a', content: 'x'.repeat(5000) } }),
    ev('tool/result', { callId: 'c1', name: 'write', result: { path: 'a', bytes: 500 } }),
    ev('model/usage', { promptTokens: 1 }),
    ev('tool/call', { callId: 'c2', name: 'read', args: { path: 'a' } }),
    ev('tool/result', { callId: 'c2', name: 'read', result: { content: 'y'.repeat(5000) } }),
    ev('command/reply', { text: 'ok' }),
    ev('user/message', { text: 'next', origin: 'controller' }),
  ]

  it('lays out the same events as the same message objects, with the content a fresh layout gives', () => {
    const events = window()
    const messagesOf = (list: SessionEvent[], chars = 2000) => eventsToGroups(list, { toolResultChars: chars }).flatMap((group) => group.messages)
    const first = messagesOf(events)
    const again = messagesOf(events)
    expect(again).to.have.length(first.length)
    again.forEach((message, i) => expect(message, `message ${i}`).to.equal(first[i]))
    // Fresh event objects (a window read again from the store): new messages, the same content.
    const fresh = messagesOf(structuredClone(events))
    expect(fresh).to.deep.equal(first)
    fresh.forEach((message, i) => expect(message, `message ${i}`).to.not.equal(first[i]))
    // Another limit: the cut messages are made again (the call's arguments, the long result).
    const narrower = messagesOf(events, 300)
    const long = first.findIndex((message: any) => message.tool_call_id === 'c2')
    expect(narrower[long]).to.not.equal(first[long])
    expect((narrower[long] as any).content.length).to.be.below((first[long] as any).content.length)
    // The write's arguments (5,000 characters) are cut at the narrower limit too.
    const argumentsOf = (messages: typeof first) => (messages[1] as any).tool_calls[0].function.arguments as string
    expect(argumentsOf(narrower).length).to.be.below(argumentsOf(first).length)
    // Messages kept from step to step cannot be changed by whoever is handed them.
    expect(Object.isFrozen(first[1]) && Object.isFrozen((first[1] as any).tool_calls[0].function)).to.equal(true)
    // And the request text of the same messages is the plain serialization.
    const body = { model: 'm', messages: again }
    expect(bodyText(body)).to.equal(JSON.stringify(body))
  })

  it('makes an assistant message whole once its calls are known: a call answered later is a new message, never one changed in place', () => {
    const events = window().slice(0, 3)
    const open = eventsToGroups(events, { toolResultChars: 2000 })[1].messages
    const before = JSON.stringify(open[0])
    const closed = eventsToGroups([...events, ev('tool/call', { callId: 'c9', name: 'read', args: { path: 'b' } })], { toolResultChars: 2000 })[1].messages
    expect(closed[0]).to.not.equal(open[0])
    expect((closed[0] as any).tool_calls).to.have.length(2)
    // The message made for the earlier window is unchanged (a request already built from it stays right).
    expect(JSON.stringify(open[0])).to.equal(before)
  })
})

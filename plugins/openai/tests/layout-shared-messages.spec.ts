import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { buildMessages, eventsToGroups, type ChatMessage } from '../src'
import { bodyText } from '../src/body-text'

/*
 * buildMessages / layoutMessages / eventsToGroups are exported (index.ts) and hand back message objects
 * kept from step to step (the system message by instructions text, for every route and session; an
 * event's message for as long as the event lives). They are frozen: a caller that tries to edit one
 * cannot change what a later layout sends, nor make the worker transport's kept request text differ from
 * the body the inline transport would send.
 */
let seq = 0
const ev = (type: string, data: any): SessionEvent => ({ seq: seq++, type, time: 0, data })
const LIMITS = { contextTokens: 100_000, toolResultChars: 2000, taskStateChars: 2000 }

const tryTo = (change: () => void) => {
  try {
    change()
  } catch {
    // A frozen message refusing the change is fine too.
  }
}

describe('laid-out messages are not shared with callers', () => {
  it('a caller editing the messages of one layout does not change the next layout', () => {
    const instructions = 'review-shared: instructions of one session'
    const events = [
      ev('user/message', { text: 'do it', origin: 'controller' }),
      ev('assistant/message', { text: 'done' }),
      ev('command/reply', { text: 'ok' }),
    ]
    const first = buildMessages({ instructions, events }, LIMITS)
    const expected = structuredClone(first)
    // Another caller (a plugin, a test, the benchmark) decorating what it was given.
    for (const message of first) tryTo(() => { (message as any).content = `${message.content} [edited]` })
    const again = buildMessages({ instructions, events }, LIMITS)
    expect(again).to.deep.equal(expected)
  })

  it('a caller editing the system message of one session does not change another session\'s', () => {
    const instructions = 'review-shared: instructions of every session'
    const one = buildMessages({ instructions, events: [ev('user/message', { text: 'one session' })] }, LIMITS)
    tryTo(() => { (one[0] as any).content = 'edited by a caller' })
    const other = buildMessages({ instructions, events: [ev('user/message', { text: 'another session' })] }, LIMITS)
    expect(other[0].content).to.equal(instructions)
  })

  it('a tool call object handed out once is not the one a later layout sends', () => {
    const events = [
      ev('assistant/message', { text: 'reading' }),
      ev('tool/call', { callId: 'c1', name: 'read', args: { path: 'a' } }),
      ev('tool/result', { callId: 'c1', name: 'read', result: { content: 'x' } }),
    ]
    const first = eventsToGroups(events, LIMITS)[0].messages[0] as Extract<ChatMessage, { role: 'assistant' }>
    tryTo(() => { first.tool_calls![0].function.arguments = '{"path":"b"}' })
    const again = eventsToGroups(events, LIMITS)[0].messages[0] as Extract<ChatMessage, { role: 'assistant' }>
    expect(again.tool_calls![0].function.arguments).to.equal('{"path":"a"}')
  })

  it('the worker request text follows the body it is given (the inline transport sends JSON.stringify of it)', () => {
    const events = [ev('user/message', { text: 'go' }), ev('assistant/message', { text: 'working' })]
    const body = { model: 'm', messages: buildMessages({ instructions: 'review-shared: worker', events }, LIMITS) }
    bodyText(body)
    tryTo(() => { (body.messages.at(-1) as any).content = 'changed after the first request' })
    expect(bodyText(body)).to.equal(JSON.stringify(body))
  })
})

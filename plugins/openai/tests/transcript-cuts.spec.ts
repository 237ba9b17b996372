import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { argumentsText, cut, eventsToGroups } from '../src/transcript'

/** Events of one `name` call with `args` and its `result`. */
function callWithResult(name: string, args: unknown, result: unknown): SessionEvent[] {
  return [
    { seq: 0, time: 0, type: 'user/message', data: { text: 'go' } },
    { seq: 1, time: 0, type: 'tool/call', data: { callId: 'c1', name, args } },
    { seq: 2, time: 0, type: 'tool/result', data: { callId: 'c1', name, result } },
  ] as SessionEvent[]
}

const messagesOf = (events: SessionEvent[], toolResultChars: number) => eventsToGroups(events, { toolResultChars }).flatMap((group) => group.messages)

/** A string is well formed when it holds no lone surrogate (String.prototype.isWellFormed, without needing Node 20's lib). */
const wellFormed = (text: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)

describe('plugin-openai: what a cut leaves the model', () => {
  it('keeps a long call\'s arguments valid JSON (servers parse them: vLLM refuses a request otherwise)', () => {
    const content = 'x'.repeat(5_700)
    for (const chars of [4_000, 200]) {
      const [, assistant] = messagesOf(callWithResult('write', { path: 'big.txt', content }, { ok: true }), chars) as any[]
      const text = assistant.tool_calls[0].function.arguments
      expect(() => JSON.parse(text), text.slice(-120)).to.not.throw()
      expect(JSON.parse(text).path).to.equal('big.txt')
    }
    // No string long enough to cut: the cut text is kept as one, still JSON.
    const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i]))
    expect(() => JSON.parse(argumentsText(many, 200))).to.not.throw()
  })

  it('says how to read the rest of a long file even when the window has room for the cut result', () => {
    const file = '文'.repeat(6_400)
    const messages = messagesOf(callWithResult('read', { path: 'big.md' }, { path: 'big.md', content: file }), 4_000) as any[]
    const tool = messages.find((message) => message.role === 'tool')
    expect(tool.content).to.match(/\d+ more characters not shown; the file goes on at character \d+: `read` with `offset`/)
  })

  it('never splits a surrogate pair where it cuts', () => {
    const emoji = '😀'.repeat(100)
    for (let limit = 1; limit < 12; limit++) expect(wellFormed(cut(`ab${emoji}`, limit)), `limit ${limit}`).to.equal(true)
    const [, , tool] = messagesOf(callWithResult('read', { path: 'e.txt' }, { path: 'e.txt', content: emoji.repeat(60) }), 203) as any[]
    expect(wellFormed(tool.content)).to.equal(true)
  })
})

describe('plugin-openai: task-state notes as merge patches', () => {
  it('shows the whole state when a value becomes null (a merge patch reads null as removed)', async () => {
    const { patchText } = await import('../src/state-notes')
    const { applyMergePatch } = await import('@taskward/protocol')
    const base = JSON.stringify({ a: 1, b: { c: 2 }, long: 'x'.repeat(400) })
    expect(patchText(base, JSON.stringify({ a: 1, b: { c: null }, d: null, long: 'x'.repeat(400) }))).to.equal(undefined)
    const changed = JSON.stringify({ a: 2, b: { c: 2 }, long: 'x'.repeat(400) })
    const patch = patchText(base, changed)!
    expect(applyMergePatch(JSON.parse(base), JSON.parse(patch))).to.deep.equal(JSON.parse(changed))
  })
})

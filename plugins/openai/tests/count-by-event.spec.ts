import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { layoutMessages, TokenCounter } from '../src'
import type { Encoder } from '../src/tokens'

/*
 * Each step lays the window out again and counts every message; what the window's events show was
 * counted on an earlier step. Counts kept with the events (the route passes `origins`) must be the
 * counts made afresh, step after step, and each event must be encoded once however little the text
 * cache keeps (with 200 sessions the windows outgrow any cache bound).
 */
describe('token counts kept with the window events', () => {
  let seq = 0
  const ev = (type: string, data: any): SessionEvent => ({ seq: seq++, type, time: 0, data })

  it('equal the counts made afresh on every step, and encode each event once', async () => {
    const kept = await new TokenCounter('gpt-4o', 8, { entries: 1, chars: 1000 }).ready()
    const fresh = await new TokenCounter('gpt-4o').ready()
    const encoder = (kept as any).encoder as Encoder
    const encoded = new Map<string, number>()
    ;(kept as any).encoder = (text: string) => (encoded.set(text, (encoded.get(text) ?? 0) + 1), encoder(text))
    const origins = new WeakMap<object, SessionEvent>()
    const limits = { contextTokens: 1_000_000, toolResultChars: 300, taskStateChars: 500 }
    const events: SessionEvent[] = [ev('user/message', { text: 'write the report', origin: 'controller' })]
    // Each layout goes on with its own notes, as a route does.
    let notes: any
    let keptNotes: any
    for (let step = 0; step < 25; step++) {
      events.push(ev('assistant/message', { text: `step ${step}: reading the next file` }))
      events.push(ev('tool/call', { callId: `c${step}`, name: 'read', args: { path: `src/part-${step}.ts` } }))
      events.push(ev('tool/result', { callId: `c${step}`, name: 'read', result: { text: `export const part${step} = ${step}\n`.repeat(step % 4 ? 3 : 40) } }))
      events.push(ev('model/usage', { promptTokens: 10, completionTokens: 2 }))
      if (step % 5 === 4) events.push(ev('command/reply', { command: 'task', replyTo: step, reply: `status after step ${step}` }))
      const input = { instructions: 'You write reports.', events: [...events], taskState: { phase: 'active', step }, notes }
      const withOrigins = layoutMessages({ ...input, notes: keptNotes, origins }, limits, (message) => kept.message(message, origins))
      const afresh = layoutMessages(input, limits, (message) => fresh.message(message))
      expect(withOrigins.messages).to.deep.equal(afresh.messages)
      expect([withOrigins.tokens, withOrigins.fixed]).to.deep.equal([afresh.tokens, afresh.fixed])
      notes = afresh.notes
      keptNotes = withOrigins.notes
    }
    // Every text shown of an event was encoded once (the text cache of one entry kept none of them), and
    // so was each task-state note and the instructions (the same frozen message from step to step).
    let noteTexts = 0
    for (const [text, times] of encoded) {
      if (/part-\d+|part\d+ =|step \d+: reading|status after step/.test(text)) expect(times, text).to.equal(1)
      if (text.startsWith('[host: task state') || text === 'You write reports.') expect(times, text).to.equal(1)
      if (text.startsWith('[host: task state')) noteTexts++
    }
    expect(noteTexts).to.be.greaterThan(5)
  })
})

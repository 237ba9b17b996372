import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { cut, layoutMessages, shownTokens, type ChatMessage, type Layout } from '../src/context'
import { DeferredCounts, TokenCounter, tokenBound } from '../src/tokens'

/*
 * Found by review: the turn's input is first cut at `floor(room / 2) * 4` characters, where `room` is
 * contextTokens less the system message's count — a count. A bound on the instructions (not counted yet
 * on this route) moved that cut without any count "deciding" the cut afterwards, so a layout by bounds
 * was taken as the exact one and sent a shorter input than exact counts would (and the next step, exact,
 * a longer one: the prompt cache missed from there). A cut input is now a decision made by counts.
 */
describe('plugin-openai: a bound on the instructions and the input\'s cut', () => {
  const events: SessionEvent[] = [{ seq: 0, type: 'user/message', time: 0, data: { text: 'word '.repeat(20_000) } }]
  const limits = { contextTokens: 4000, toolResultChars: 2000, taskStateChars: 400 }
  const instructions = 'You are a careful agent. '.repeat(40)

  /** What the route does with a layout by bounds: keeps it only when no count decided anything and it fits. */
  const kept = (layout: Layout, exact: () => Layout) => !layout.fitted && layout.fits ? layout : exact()

  it('with any upper-bound count (here exact but for the system message), the route sends the exact input', () => {
    // "Exact": one token per 8 characters of user text, 4 of the system's; the bound overcounts the system message only.
    const exact = (m: ChatMessage) => Math.ceil(((m as any).content ?? '').length / (m.role === 'system' ? 4 : 8)) + 4
    const bound = (m: ChatMessage) => m.role === 'system' ? tokenBound((m as any).content) + 4 : exact(m)
    const truth = layoutMessages({ instructions, events }, limits, exact)
    const layout = layoutMessages({ instructions, events }, limits, bound)
    expect(layout.fitted, 'a cut input depends on a count').to.equal(true)
    const sent = kept(layout, () => layoutMessages({ instructions, events }, limits, exact))
    expect(sent.messages[1].content!.length, 'the input as shown').to.equal(truth.messages[1].content!.length)
    expect(shownTokens(sent, exact)).to.equal(truth.tokens)
  })

  it('through TokenCounter and DeferredCounts, when the cut input was counted before but not the instructions', async () => {
    const counter = await new TokenCounter('gpt-4o').ready()
    const truthCounter = await new TokenCounter('gpt-4o').ready()
    const systemBound = tokenBound(instructions) + 4
    // The cut a layout by bounds makes (cutInput's first round), counted on an earlier step.
    const room = limits.contextTokens - systemBound - 32
    counter.count(cut(events[0].data.text, Math.max(200, Math.floor(room / 2) * 4)))
    const deferred = new DeferredCounts()
    const layout = layoutMessages({ instructions, events }, limits, (m) => counter.message(m, undefined, deferred))
    const truth = layoutMessages({ instructions, events }, limits, (m) => truthCounter.message(m))
    expect(deferred.texts).to.deep.equal([instructions])
    const sent = kept(layout, () => layoutMessages({ instructions, events }, limits, (m) => counter.message(m)))
    expect(sent.messages[1].content!.length, 'the input as shown').to.equal(truth.messages[1].content!.length)
  })
})

import { expect } from 'chai'
import {
  REVIEW_ENTRY_MAX_CHARS, REVIEW_PAGE_MAX_BYTES, ReviewPageBuilder, reviewEntry, utf8Length,
  type ReviewPageOptions, type SessionEvent,
} from '@taskward/protocol'

/** A log as DSH writes one: every streamed argument delta an event of its own between the real ones. */
function dshLikeLog(): SessionEvent[] {
  const log: SessionEvent[] = []
  const push = (type: string, data: unknown) => log.push({ seq: log.length, type, time: 0, data })
  push('user/message', { text: 'Write a.txt' })
  for (let n = 0; n < 3; n++) {
    for (let k = 0; k < 140; k++) push('dsh:assistant/chunk', { kind: 'tool-arguments', delta: `{"conte${k}` })
    push('dsh:model/usage', { input: 10, output: 2 })
    push('assistant/message', { text: '' })
    push('tool/call', { callId: `c${n}`, name: 'write', args: { file_path: `/w/${n}.txt`, content: `file ${n}\n` } })
    push('tool/result', { callId: `c${n}`, name: 'write', result: `Wrote /w/${n}.txt` })
  }
  push('tool/call', { callId: 'r', name: 'task_report_stage', args: { nodeId: 'a' } })
  return log
}

function page(events: SessionEvent[], options: Partial<ReviewPageOptions> & { from: number, limit: number }) {
  const builder = new ReviewPageBuilder({ cutoffSeq: events.at(-1)!.seq, ...options })
  for (const event of events) if (!builder.add(event)) break
  return builder.page()
}

/** Bytes of a page as a host renders it to the model (indented JSON, with the reviewer's ids). */
const rendered = (p: object) => utf8Length(JSON.stringify({ sessionId: 'session-0123456789abcdef', cutoffSeq: 123456, ...p }, null, 2))

describe('protocol: review pages (what a reviewer reads of the main session)', () => {
  it('skips streaming fragments and host events without counting them against the limit', () => {
    const log = dshLikeLog()
    const cutoff = log.at(-1)!.seq
    // The reviewer's "last 20 events before the cutoff" look: 19 of them were fragments before.
    const p = page(log, { from: cutoff - 19, limit: 20 })
    expect(p.events.map((e) => e.type)).to.deep.equal(['tool/call', 'tool/result', 'tool/call'])
    expect(p.skipped).to.equal(17)
    const whole = page(log, { from: 0, limit: 20 })
    expect(whole.events.map((e) => [e.type, 'name' in e ? e.name : undefined])).to.deep.equal([
      ['user/message', undefined],
      ['tool/call', 'write'], ['tool/result', 'write'],
      ['tool/call', 'write'], ['tool/result', 'write'],
      ['tool/call', 'write'], ['tool/result', 'write'],
      ['tool/call', 'task_report_stage'],
    ])
    expect(whole.skipped).to.equal(log.length - 8)
    expect(whole).to.not.have.property('next')
    // Tool calls carry their whole arguments, as an object.
    expect(whole.events[1]).to.deep.include({ args: { file_path: '/w/0.txt', content: 'file 0\n' } })
  })

  it('counts only entries against the limit and says where the next page starts', () => {
    const log = dshLikeLog()
    const first = page(log, { from: 0, limit: 2 })
    expect(first.events.map((e) => e.seq)).to.deep.equal([0, 143])
    expect(first.next).to.equal(144)
    const second = page(log, { from: first.next!, limit: 200 })
    expect(second.events.map((e) => e.seq)).to.deep.equal([144, 287, 288, 431, 432, 433])
    expect(second).to.not.have.property('next')
  })

  it('keeps a page of 200 large entries under the byte budget, well below DSH\'s 50 KB spill', () => {
    const log: SessionEvent[] = Array.from({ length: 400 }, (_, seq) => ({
      seq, type: seq % 2 ? 'tool/result' : 'tool/call', time: 0,
      data: seq % 2 ? { callId: `c${seq - 1}`, name: 'read', result: '词'.repeat(3000) + '\n'.repeat(500) } : { callId: `c${seq}`, name: 'read', args: { file_path: 'x'.repeat(2000) } },
    }))
    const p = page(log, { from: 0, limit: 200 })
    expect(p.events.length).to.be.within(1, 199)
    expect(rendered(p)).to.be.at.most(REVIEW_PAGE_MAX_BYTES)
    expect(REVIEW_PAGE_MAX_BYTES).to.be.below(51_200)
    expect(p.next).to.equal(p.events.at(-1)!.seq + 1)
  })

  it('cuts a long result with a marker that names the call reading on, and the pieces make the whole', () => {
    const text = Array.from({ length: 4000 }, (_, i) => `line ${i} ${'é'.repeat(i % 7)}`).join('\n')
    const event: SessionEvent = { seq: 7, type: 'tool/result', time: 0, data: { callId: 'c', name: 'read', result: text } }
    const first = page([event], { from: 7, limit: 50 }).events[0] as any
    expect(first.cut).to.deep.include({ field: 'result', offset: 0, total: text.length, next: { from: 7, limit: 1, offset: first.cut.shown } })
    expect(first.result).to.include(`read on with review_read_log {"from":7,"limit":1,"offset":${first.cut.shown}}`)
    let whole = first.result.slice(0, first.cut.shown)
    for (let next = first.cut.next; next;) {
      const piece = page([event], { ...next, cutoffSeq: 7 }).events[0] as any
      expect(piece.cut.offset).to.equal(next.offset)
      whole += piece.result.slice(0, piece.cut.shown)
      next = piece.cut.next
    }
    expect(whole).to.equal(text)
  })

  it('cuts an object too large to show as its JSON text, and never returns an empty page for one huge entry', () => {
    const args = { file_path: 'a.txt', content: '\u0001'.repeat(60_000) }
    const event: SessionEvent = { seq: 3, type: 'tool/call', time: 0, data: { callId: 'c', name: 'write', args } }
    const p = page([event], { from: 0, limit: 5 })
    expect(p.events).to.have.length(1)
    const entry = p.events[0] as any
    expect(entry.args).to.be.a('string')
    expect(entry.args.startsWith('{"file_path":"a.txt","content":"')).to.equal(true)
    expect(entry.cut).to.include({ field: 'args', total: JSON.stringify(args).length })
    expect(rendered(p)).to.be.at.most(REVIEW_PAGE_MAX_BYTES)
    // A budget smaller than one cut entry: the entry is cut shorter until it fits.
    const small = page([event], { from: 0, limit: 5, maxBytes: 2000 })
    expect(small.events).to.have.length(1)
    expect((small.events[0] as any).cut.shown).to.be.below(entry.cut.shown)
    expect(rendered(small)).to.be.at.most(2000)
  })

  it('leaves out events after the cutoff, records, and assistant messages without text', () => {
    expect(reviewEntry({ seq: 0, type: 'extension/record', time: 0, data: {} })).to.equal(undefined)
    expect(reviewEntry({ seq: 0, type: 'assistant/message', time: 0, data: { text: '' } })).to.equal(undefined)
    expect(reviewEntry({ seq: 0, type: 'assistant/message', time: 0, data: { text: 'done' } })).to.deep.equal({ seq: 0, type: 'assistant/message', text: 'done' })
    const errored = reviewEntry({ seq: 1, type: 'tool/result', time: 0, data: { callId: 'c', name: 'write', error: { code: 'FORBIDDEN', message: 'no', details: {} } } })
    expect(errored).to.deep.equal({ seq: 1, type: 'tool/result', callId: 'c', name: 'write', error: { code: 'FORBIDDEN', message: 'no' } })
    const log = dshLikeLog()
    const p = page(log, { from: 0, limit: 200, cutoffSeq: 282 })
    expect(p.events.at(-1)!.seq).to.be.at.most(282)
    expect(p).to.not.have.property('next')
    expect(REVIEW_ENTRY_MAX_CHARS).to.be.greaterThan(1000)
  })
})

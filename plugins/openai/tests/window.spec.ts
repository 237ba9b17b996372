import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { EventWindows } from '../src/window'
import { buildMessages } from '../src'

/** The in-memory event window of a route: each kept event is small, whatever a tool returned. */
describe('event window (memory per event)', () => {
  const TOOL_LIMIT = 1000
  const fakeCtx = { sessions: { observe: () => () => {}, observeRollback: () => () => {} } } as any

  function sessionWith(events: SessionEvent[]) {
    return { id: 's1', seq: events.length, read: async () => events } as any
  }

  it('keeps a wide tool result (200 long strings, 200 wide objects) to a few times toolResultChars, still a valid context', async () => {
    const wide = {
      seq: 1, type: 'tool/result', time: 0,
      data: {
        callId: 'c1', name: 'review_read_log',
        result: { events: Array.from({ length: 200 }, (_, i) => ({ seq: i, data: Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`k${k}`, 'y'.repeat(2000)])) })) },
      },
    }
    const args = {
      seq: 0, type: 'tool/call', time: 0,
      data: { callId: 'c1', name: 'review_read_log', args: Object.fromEntries(Array.from({ length: 200 }, (_, k) => [`a${k}`, 'z'.repeat(2000)])) },
    }
    const windows = new EventWindows(fakeCtx, 300, TOOL_LIMIT, 96_000)
    const { events } = await windows.latest(sessionWith([args, wide] as SessionEvent[]))
    for (const event of events) {
      expect(JSON.stringify(event.data).length, event.type).to.be.lessThan(TOOL_LIMIT * 4)
      expect(event.data.callId).to.equal('c1')
      expect(event.data.name).to.equal('review_read_log')
    }
    // What the model is shown still pairs the call with its result, both cut with the marker.
    const messages = buildMessages({ instructions: '', events }, { contextTokens: 24_000, toolResultChars: TOOL_LIMIT, taskStateChars: 200 })
    const tool = messages.find((m) => m.role === 'tool') as any
    expect(tool.tool_call_id).to.equal('c1')
    expect(tool.content).to.include('…[cut:')
  })

  it('keeps small tool events exactly as they are', async () => {
    const call = { seq: 0, type: 'tool/call', time: 0, data: { callId: 'c', name: 'read', args: { path: 'a.txt' } } }
    const result = { seq: 1, type: 'tool/result', time: 0, data: { callId: 'c', name: 'read', result: { path: 'a.txt', content: 'hello' } } }
    const windows = new EventWindows(fakeCtx, 300, TOOL_LIMIT, 96_000)
    const { events } = await windows.latest(sessionWith([call, result] as SessionEvent[]))
    expect(events.map((e) => e.data)).to.deep.equal([call.data, result.data])
  })

  describe('how many windows are kept', () => {
    /** Sessions whose log reads are counted (each holds a few small events). */
    function sessions(count: number) {
      const reads = new Map<string, number>()
      const list = Array.from({ length: count }, (_, i) => {
        const id = `s${i}`
        const events = [{ seq: 0, type: 'user/message', time: 0, data: { text: `hello ${i}` } }] as SessionEvent[]
        return { id, seq: events.length, read: async () => (reads.set(id, (reads.get(id) ?? 0) + 1), events) } as any
      })
      return { list, reads: () => [...reads.values()].reduce((a, b) => a + b, 0) }
    }

    it('keeps a window for every live session (each asked lately): 50 agents in turn read their logs once', async () => {
      const windows = new EventWindows(fakeCtx, 300, TOOL_LIMIT, 96_000, 32)
      const { list, reads } = sessions(50)
      for (let round = 0; round < 3; round++) {
        for (const session of list) await windows.latest(session)
      }
      expect(reads()).to.equal(50)
    })

    it('keeps at most `sessions` windows of sessions not asked lately, least recently used first out', async () => {
      const windows = new EventWindows(fakeCtx, 300, TOOL_LIMIT, 96_000, 2, 0)
      const { list, reads } = sessions(3)
      for (const session of list) await windows.latest(session)
      await windows.latest(list[2])
      await windows.latest(list[1])
      expect(reads()).to.equal(3)
      await windows.latest(list[0])
      expect(reads()).to.equal(4)
    })
  })
})

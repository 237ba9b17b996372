import { expect } from 'chai'
import { foldRepeat, judgeRepeat, REPEAT_INIT, stableJson, type RepeatState } from '../src/task'

let seq = 0
const call = (callId: string, name: string, args: unknown) => ({ seq: seq++, type: 'tool/call', data: { callId, name, args } })
const result = (callId: string, value: unknown) => ({ seq: seq++, type: 'tool/result', data: { callId, result: value } })
const failed = (callId: string, code: string, message = 'no') => ({ seq: seq++, type: 'tool/result', data: { callId, error: { code, message } } })
const fold = (events: { type: string, data?: any }[], state: RepeatState = REPEAT_INIT) => events.reduce(foldRepeat, state)
const times = (n: number, name: string, args: unknown, value: unknown) => Array.from({ length: n }, () => {
  const id = `${name}-${seq}`
  return [call(id, name, args), result(id, value)]
}).flat()

describe('repeated tool calls (pure)', () => {
  it('allows a call until it was made `limit` times alike in a row with alike results, then says repeated, then loop', () => {
    let state = fold(times(2, 'read', { path: 'a' }, { content: 'A' }))
    expect(judgeRepeat(state, 'read', { path: 'a' }, 3)).to.deep.equal({ kind: 'allow' })
    state = fold(times(1, 'read', { path: 'a' }, { content: 'A' }), state)
    expect(judgeRepeat(state, 'read', { path: 'a' }, 3)).to.deep.equal({ kind: 'repeated', count: 3 })
    // Other arguments, another tool: allowed.
    expect(judgeRepeat(state, 'read', { path: 'b' }, 3).kind).to.equal('allow')
    expect(judgeRepeat(state, 'grep', { path: 'a' }, 3).kind).to.equal('allow')
    // Answered TOOL_REPEATED: the same call again is a loop.
    state = fold([call('r', 'read', { path: 'a' }), failed('r', 'TOOL_REPEATED')], state)
    expect(judgeRepeat(state, 'read', { path: 'a' }, 3)).to.deep.equal({ kind: 'loop', count: 3 })
    // Off with 0.
    expect(judgeRepeat(state, 'read', { path: 'a' }, 0).kind).to.equal('allow')
  })

  it('a different result, another call in between, or a person\'s message breaks the row; a controller turn does not', () => {
    const base = fold([...times(2, 'read', { path: 'a' }, 'A'), ...times(1, 'read', { path: 'a' }, 'A changed')])
    expect(judgeRepeat(base, 'read', { path: 'a' }, 2).kind).to.equal('allow')
    const between = fold([...times(2, 'read', { path: 'a' }, 'A'), ...times(1, 'glob', {}, []), ...times(1, 'read', { path: 'a' }, 'A')])
    expect(judgeRepeat(between, 'read', { path: 'a' }, 2).kind).to.equal('allow')
    const two = fold(times(2, 'read', { path: 'a' }, 'A'))
    expect(judgeRepeat(fold([{ type: 'user/message', data: { text: 'look again' } }], two), 'read', { path: 'a' }, 2).kind).to.equal('allow')
    expect(judgeRepeat(fold([{ type: 'user/message', data: { text: 'continue', origin: 'controller' } }], two), 'read', { path: 'a' }, 2).kind).to.equal('repeated')
    // After a loop pause, a person's /task resume gives one more TOOL_REPEATED answer first.
    const looped = fold([call('r', 'read', { path: 'a' }), failed('r', 'TOOL_REPEATED')], two)
    expect(judgeRepeat(looped, 'read', { path: 'a' }, 2).kind).to.equal('loop')
    expect(judgeRepeat(fold([{ type: 'user/message', data: { text: '/task resume', origin: 'user' } }], looped), 'read', { path: 'a' }, 2).kind).to.equal('repeated')
    expect(judgeRepeat(fold([{ type: 'user/message', data: { text: '/task resume', origin: 'controller' } }], looped), 'read', { path: 'a' }, 2).kind).to.equal('loop')
  })

  it('identical errors count as identical results; key order does not matter; a result without its call is ignored', () => {
    const errors = fold([call('1', 'write', { path: 'x', content: 'c' }), failed('1', 'PATH_FORBIDDEN'), call('2', 'write', { content: 'c', path: 'x' }), failed('2', 'PATH_FORBIDDEN')])
    expect(judgeRepeat(errors, 'write', { path: 'x', content: 'c' }, 2).kind).to.equal('repeated')
    const stray = fold([result('nope', 'A'), result('nope', 'A'), result('nope', 'A')])
    expect(judgeRepeat(stray, 'read', {}, 1).kind).to.equal('allow')
    expect(stableJson({ b: [{ d: 1, c: 2 }], a: null })).to.equal('{"a":null,"b":[{"c":2,"d":1}]}')
  })

  it('reads DSH\'s shape of the answer (an error whose text is the refusal) as TOOL_REPEATED too', () => {
    const three = fold(times(3, 'read', { file_path: '/w/a' }, 'A'))
    for (const answer of [failed('x', 'TOOL_FAILED', 'TOOL_REPEATED: read was called 3 times'), failed('x', 'TOOL_FAILED', 'Error: TOOL_REPEATED: read was called 3 times')]) {
      const state = fold([call('x', 'read', { file_path: '/w/a' }), answer], three)
      expect(judgeRepeat(state, 'read', { file_path: '/w/a' }, 3).kind).to.equal('loop')
    }
  })

  it('counts on through another plugin\'s message (DSH\'s reminders), and a DSH command resets the refusal as a person\'s does', () => {
    const notice = { type: 'user/message', data: { text: 'You called read 3 times', origin: 'plugin' } }
    const state = fold([...times(2, 'read', { path: 'a' }, 'A'), notice, ...times(1, 'read', { path: 'a' }, 'A')])
    expect(judgeRepeat(state, 'read', { path: 'a' }, 3).kind).to.equal('repeated')
    const refused = fold([call('r', 'read', { path: 'a' }), failed('r', 'TOOL_REPEATED')], state)
    expect(judgeRepeat(refused, 'read', { path: 'a' }, 3).kind).to.equal('loop')
    const resumed = fold([{ type: 'command/run', data: { text: '/task resume' } }], refused)
    expect(judgeRepeat(resumed, 'read', { path: 'a' }, 3).kind).to.equal('repeated')
  })

  it('never takes a result that holds the words for the refusal: the same call returning them is still stopped', () => {
    // A grep of the docs, or a file the agent wrote to look like the answer, returned again and again.
    for (const text of ['TOOL_REPEATED: read was called 3 times', 'docs/supervisor.md:288: holding `TOOL_REPEATED: …`']) {
      const state = fold(times(10, 'grep', { pattern: 'TOOL_REPEATED' }, text))
      expect(judgeRepeat(state, 'grep', { pattern: 'TOOL_REPEATED' }, 3).kind, text).to.not.equal('allow')
    }
    const inside = fold([...times(3, 'read', { path: 'x' }, 'A'), call('y', 'read', { path: 'x' }), failed('y', 'TOOL_FAILED', 'ENOENT: no such file TOOL_REPEATED: x')])
    expect(judgeRepeat(inside, 'read', { path: 'x' }, 3).kind).to.equal('allow')
  })
})

import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { buildMessages, estimateTokens, layoutMessages, shrink, TASK_STATE_HEADER, type ChatMessage, type StateNote } from '../src'
import { estimateMessage } from '../src/context'
import { taskStateOf } from '@taskward/testkit'

let seq = 0
const ev = (type: string, data: any): SessionEvent => ({ seq: seq++, type, time: 0, data })
const user = (text: string, origin?: string) => ev('user/message', { text, ...(origin ? { origin } : {}) })
const said = (text: string) => ev('assistant/message', { text })
const call = (callId: string, name: string, args: any = {}) => ev('tool/call', { callId, name, args })
const result = (callId: string, name: string, value: any) => ev('tool/result', { callId, name, result: value })
const failed = (callId: string, name: string, code: string) => ev('tool/result', { callId, name, error: { code, message: 'no' } })

const LIMITS = { contextTokens: 4000, toolResultChars: 100, taskStateChars: 200 }
const total = (messages: ChatMessage[]) => messages.reduce((sum, m) => sum + estimateTokens(JSON.stringify(m)), 0)

describe('model context (pure)', () => {
  beforeEach(() => { seq = 0 })

  it('maps a turn: text and its tool calls in one assistant message, each result as a tool message with the call id', () => {
    const messages = buildMessages({
      instructions: 'be good',
      events: [
        user('do it', 'controller'),
        said('reading'),
        call('c1', 'read', { path: 'a.txt' }), result('c1', 'read', { text: 'A' }),
        call('c2', 'grep', { pattern: 'x' }), failed('c2', 'grep', 'PATH_FORBIDDEN'),
        ev('model/usage', { promptTokens: 1, completionTokens: 2 }),
        ev('extension/record', { namespace: 'x', kind: 'y', payload: {} }),
        said('done'),
      ],
    }, LIMITS)
    expect(messages).to.deep.equal([
      { role: 'system', content: 'be good' },
      { role: 'user', content: '[controller] do it' },
      {
        role: 'assistant', content: 'reading', tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a.txt"}' } },
          { id: 'c2', type: 'function', function: { name: 'grep', arguments: '{"pattern":"x"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"seq":3,"result":{"text":"A"}}' },
      { role: 'tool', tool_call_id: 'c2', content: '{"seq":5,"error":{"code":"PATH_FORBIDDEN","message":"no"}}' },
      { role: 'assistant', content: 'done' },
    ])
  })

  it('a command typed while a tool call runs does not cut the call off from its result (tool messages stay right after their call)', () => {
    const messages = buildMessages({
      instructions: '',
      events: [
        user('write the file'),
        said('writing'),
        call('c1', 'write', { path: 'a.txt' }),
        // The operator runs a command while the tool is still working.
        user('/task status'),
        ev('command/reply', { command: 'task', replyTo: 3, reply: { phase: 'active' } }),
        result('c1', 'write', { bytes: 3 }),
        said('done'),
      ],
    }, LIMITS)
    const roles = messages.map((m) => m.role)
    const assistant = roles.indexOf('assistant')
    expect(roles[assistant + 1]).to.equal('tool')
    const tool = messages[assistant + 1] as Extract<ChatMessage, { role: 'tool' }>
    expect(tool.tool_call_id).to.equal('c1')
    expect(tool.content).to.equal('{"seq":5,"result":{"bytes":3}}')
    expect(messages.filter((m) => m.role === 'tool')).to.have.length(1)
    // The command and its reply are still shown, after the call's answer.
    const contents = messages.map((m) => 'content' in m ? m.content : '')
    expect(contents).to.include('/task status')
    expect(contents.findIndex((c) => c === '/task status')).to.be.greaterThan(assistant + 1)
    expect(contents.some((c) => typeof c === 'string' && c.startsWith('[host: command reply]'))).to.equal(true)
  })

  it('cuts a long tool result at the limit with a marker saying how much is not shown', () => {
    const messages = buildMessages({ instructions: '', events: [user('go'), call('c', 'read'), result('c', 'read', 'x'.repeat(5000))] }, LIMITS)
    const tool = messages.find((m) => m.role === 'tool') as Extract<ChatMessage, { role: 'tool' }>
    expect(tool.content.length).to.be.lessThan(350)
    // The JSON stays whole; the count is of the value's characters, and the marker says how to read on.
    const shown = JSON.parse(tool.content).result as string
    const [head, marker] = shown.split('\n…[cut: ')
    expect(Number(/^(\d+) more characters not shown/.exec(marker)?.[1]) + head.length).to.equal(5000)
    expect(marker).to.include(`\`read\` with \`offset\` ${head.length} and a \`limit\``).and.include('`grep`')
  })

  it('counts what was left out of a value the event window already cut, and a read\'s own offset', () => {
    // The window keeps a 9,000-character content cut at 4,000 (shrink); the layout cuts it again.
    const kept = shrink({ path: 'a.md', content: 'y'.repeat(9000) }, 4000)
    const messages = buildMessages({ instructions: '', events: [user('go'), call('c', 'read', { path: 'a.md', offset: 500 }), result('c', 'read', kept)] }, LIMITS)
    const shown = JSON.parse((messages.find((m) => m.role === 'tool') as any).content).result.content as string
    const [head, marker] = shown.split('\n…[cut: ')
    expect(Number(/^(\d+) more/.exec(marker)?.[1]) + head.length).to.equal(9000)
    expect(marker).to.include(`\`offset\` ${500 + head.length} `)
  })

  it('always keeps the newest call and its result: cut to fit the room, older entries dropped first', () => {
    const events: SessionEvent[] = [user('THE INPUT')]
    for (let i = 0; i < 10; i++) events.push(said(`step ${i} ${'s'.repeat(400)}`))
    events.push(call('big', 'read', { path: 'big.md' }), result('big', 'read', { path: 'big.md', content: '字'.repeat(6000) }))
    const count = (m: ChatMessage) => estimateMessage(m) + ('content' in m && m.content ? (m.content.match(/字/g) ?? []).length : 0)
    const limits = { contextTokens: 1500, toolResultChars: 4000, taskStateChars: 200 }
    const layout = layoutMessages({ instructions: 'sys', events }, limits, count)
    expect(layout.fits).to.equal(true)
    // The step's text and its call are one group (seq 10).
    expect(layout.newest).to.deep.equal({ seq: 10, cut: true })
    expect(layout.tokens).to.be.at.most(limits.contextTokens)
    const tool = layout.messages.find((m) => m.role === 'tool') as any
    expect(tool?.tool_call_id).to.equal('big')
    const content = JSON.parse(tool.content).result.content as string
    const [head, marker] = content.split('\n…[cut: ')
    expect(Number(/^(\d+) more/.exec(marker)?.[1]) + head.length).to.equal(6000)
    expect(head.length).to.be.greaterThan(500)
    // The older steps went; the input stays.
    expect(layout.messages.map((m) => (m as any).content)).to.include('THE INPUT').and.include(`step 9 ${'s'.repeat(400)}`).and.not.include(`step 8 ${'s'.repeat(400)}`)
    // The next step, with a newer call: the cut read is dropped rather than cutting the new one.
    events.push(ev('model/usage', { promptTokens: 1, completionTokens: 1 }), call('w', 'write', { path: 'a.txt' }), result('w', 'write', { bytes: 1 }))
    const next = layoutMessages({ instructions: 'sys', events, keepFrom: layout.keepFrom, notes: layout.notes }, limits, count)
    expect(next.newest).to.deep.equal({ seq: 14, cut: false })
    expect(next.messages.filter((m) => m.role === 'tool').map((m: any) => m.tool_call_id)).to.deep.equal(['w'])
  })

  it('does not fit (the step ends MODEL_CONTEXT_EXCEEDED) only when even the newest result cut short cannot', () => {
    const events: SessionEvent[] = [user('go'), call('big', 'read', { path: 'big.md' }), result('big', 'read', { path: 'big.md', content: 'z'.repeat(6000) })]
    expect(layoutMessages({ instructions: 'sys', events }, { contextTokens: 200, toolResultChars: 4000, taskStateChars: 200 }).fits).to.equal(true)
    expect(layoutMessages({ instructions: 'sys', events }, { contextTokens: 80, toolResultChars: 4000, taskStateChars: 200 }).fits).to.equal(false)
  })

  it('answers a call whose result was never recorded, and leaves out a result whose call is outside the window', () => {
    const messages = buildMessages({ instructions: '', events: [result('old', 'read', 1), user('go'), call('c', 'write'), user('again')] }, LIMITS)
    expect(messages.filter((m) => m.role === 'tool')).to.deep.equal([{ role: 'tool', tool_call_id: 'c', content: '(no result was recorded)' }])
    expect(JSON.stringify(messages)).to.not.include('old')
  })

  it('keeps the newest events within the token budget, drops the oldest with a note, and always keeps the turn input', () => {
    const events: SessionEvent[] = []
    for (let i = 0; i < 300; i++) events.push(user(`question ${i} ${'q'.repeat(200)}`), said(`answer ${i} ${'a'.repeat(200)}`))
    events.push(user('THE INPUT'))
    for (let i = 0; i < 3; i++) events.push(call(`k${i}`, 'read'), result(`k${i}`, 'read', 'r'))
    const messages = buildMessages({ instructions: 'sys', events, unread: 1000 }, LIMITS)
    expect(total(messages)).to.be.at.most(LIMITS.contextTokens * 1.1)
    expect(messages[1].role).to.equal('user')
    expect((messages[1] as any).content).to.match(/^\[host: conversation entries before seq \d+ are not shown/)
    // A read window that slides (unread events before it): the start is at least half-way into it.
    expect(Number((messages[1] as any).content.match(/\d+/)[0])).to.be.greaterThan(300)
    const contents = messages.map((m) => (m as any).content)
    expect(contents).to.include('THE INPUT')
    expect(contents).to.include('answer 299 ' + 'a'.repeat(200))
    expect(contents).to.not.include('question 0 ' + 'q'.repeat(200))
    // Calls without text between them form one assistant message, answered by their tool messages.
    const index = messages.findIndex((m) => m.role === 'assistant' && m.tool_calls)
    expect((messages[index] as any).tool_calls.map((c: any) => c.id)).to.deep.equal(['k0', 'k1', 'k2'])
    expect(messages.slice(index + 1).map((m) => (m as any).tool_call_id)).to.deep.equal(['k0', 'k1', 'k2'])
  })

  it('a slash command typed during the turn is not taken for the turn\'s input: the real input still always stays', () => {
    const events: SessionEvent[] = [user('THE INPUT')]
    // A long turn: many calls and results, more than the budget holds, with a command typed midway.
    for (let i = 0; i < 60; i++) {
      events.push(said(`step ${i} ${'s'.repeat(300)}`), call(`k${i}`, 'read'), result(`k${i}`, 'read', 'r'.repeat(90)))
      if (i === 30) events.push(user('/task status'), ev('command/reply', { command: 'task', reply: { phase: 'active' } }))
    }
    const messages = buildMessages({ instructions: 'sys', events }, LIMITS)
    const contents = messages.map((m) => (m as any).content)
    expect(contents).to.include('THE INPUT')
  })

  it('cuts an input too long for the budget and drops everything older', () => {
    const messages = buildMessages({ instructions: 'sys', events: [user('old'), user('x'.repeat(100_000))] }, LIMITS)
    expect(total(messages)).to.be.at.most(LIMITS.contextTokens)
    const input = messages.find((m) => m.role === 'user' && m.content.startsWith('xxx')) as any
    expect(input.content).to.match(/…\[cut: \d+ more characters not shown\]$/)
  })

  it('puts the task state last, after the transcript, cut at taskStateChars; the system message is the instructions alone', () => {
    const messages = buildMessages({ instructions: 'sys', taskState: { task: { id: 't1', objective: 'o'.repeat(1000) } }, events: [user('go'), said('ok')] }, LIMITS)
    expect(messages[0]).to.deep.equal({ role: 'system', content: 'sys' })
    const last = messages.at(-1) as any
    expect(last.role).to.equal('user')
    expect(last.content.startsWith(TASK_STATE_HEADER + ' as of seq 2; it holds until a newer one follows]\n{"task":{"id":"t1"')).to.equal(true)
    expect(last.content).to.match(/not shown\]$/)
    expect(last.content.length).to.be.lessThan(400)
    expect(messages.map((m) => (m as any).content).slice(1, -1)).to.deep.equal(['go', 'ok'])
  })

  it('is append-only: the next step\'s request starts with the whole previous one, less the task state', () => {
    const events: SessionEvent[] = [user('do it')]
    let previous: ChatMessage[] | undefined
    let keepFrom: number | undefined
    for (let step = 0; step < 20; step++) {
      // As the agent records a step without text: its usage, then its calls.
      events.push(ev('model/usage', { promptTokens: 1 }), call(`c${step}`, 'read', { path: `f${step}` }), result(`c${step}`, 'read', `content ${step}`))
      const layout = layoutMessages({ instructions: 'sys', taskState: { step }, events, keepFrom }, LIMITS)
      if (previous) expect(layout.messages.slice(0, previous.length - 1)).to.deep.equal(previous.slice(0, -1))
      expect(layout.dropped).to.equal(false)
      previous = layout.messages
      keepFrom = layout.keepFrom
    }
  })

  it('a task state unchanged since its note adds nothing; a changed one is appended after what is new, the old note left in place', () => {
    const events: SessionEvent[] = [user('do it')]
    const first = layoutMessages({ instructions: 'sys', taskState: { phase: 'active', node: 'a' }, events }, LIMITS)
    events.push(ev('model/usage', {}), call('c0', 'read'), result('c0', 'read', 'x'))
    const same = layoutMessages({ instructions: 'sys', taskState: { phase: 'active', node: 'a' }, events, keepFrom: first.keepFrom, notes: first.notes }, LIMITS)
    // Exactly the previous request, then the new call and its result.
    expect(same.messages.slice(0, first.messages.length)).to.deep.equal(first.messages)
    expect(same.messages.slice(first.messages.length).map((m) => m.role)).to.deep.equal(['assistant', 'tool'])
    events.push(ev('model/usage', {}), call('c1', 'write'), result('c1', 'write', 'ok'))
    const changed = layoutMessages({ instructions: 'sys', taskState: { phase: 'reviewing', node: 'a' }, events, keepFrom: same.keepFrom, notes: same.notes }, LIMITS)
    expect(changed.messages.slice(0, same.messages.length)).to.deep.equal(same.messages)
    const notes = changed.messages.filter((m) => (m as any).content?.startsWith(TASK_STATE_HEADER)).map((m) => (m as any).content)
    expect(notes).to.have.length(2)
    expect(notes[1]).to.include('"reviewing"')
    expect((changed.messages.at(-1) as any).content).to.equal(notes[1])
  })

  it('a changed state after a note still shown is a JSON merge patch on it; read in order, the notes give the state now', () => {
    const big = { task: { id: 't1', objective: 'o'.repeat(60), phase: 'active', revision: 3 }, nodes: [{ id: 'a', status: 'running' }, { id: 'b', status: 'pending' }], pendingReview: { kind: 'stage' } }
    const events: SessionEvent[] = [user('do it')]
    const limits = { ...LIMITS, taskStateChars: 4000 }
    const first = layoutMessages({ instructions: 'sys', taskState: big, events }, limits)
    events.push(ev('model/usage', {}), call('c0', 'write'), result('c0', 'write', 'ok'))
    const next = { ...big, task: { ...big.task, phase: 'reviewing', revision: 4 } } as any
    delete next.pendingReview
    const second = layoutMessages({ instructions: 'sys', taskState: next, events, keepFrom: first.keepFrom, notes: first.notes }, limits)
    const notes = second.messages.filter((m) => (m as any).content?.startsWith(TASK_STATE_HEADER)).map((m) => (m as any).content as string)
    expect(notes).to.have.length(2)
    expect(notes[1]).to.match(/^\[host: task state \(task_status\) as of seq 4: changes since seq 1, a JSON merge patch\]\n/)
    expect(JSON.parse(notes[1].slice(notes[1].indexOf('\n') + 1))).to.deep.equal({ task: { phase: 'reviewing', revision: 4 }, pendingReview: null })
    expect(taskStateOf(second.messages)).to.deep.equal(next)
    // The window drops the first note: the patch is shown whole from then on.
    const third = layoutMessages({ instructions: 'sys', taskState: next, events, keepFrom: 2, notes: second.notes }, limits)
    const shown = third.messages.filter((m) => (m as any).content?.startsWith(TASK_STATE_HEADER)).map((m) => (m as any).content as string)
    expect(shown).to.have.length(1)
    expect(shown[0]).to.not.include('merge patch')
    expect(taskStateOf(third.messages)).to.deep.equal(next)
    expect(third.notes).to.deep.equal([{ beforeSeq: 4, state: JSON.stringify(next) }])
  })

  it('once the window is full, drops down to the low-water mark in one jump, then keeps its start for many steps', () => {
    const events: SessionEvent[] = [user('THE INPUT')]
    let keepFrom: number | undefined
    let notes: StateNote[] | undefined
    const starts: number[] = []
    const drops: number[] = []
    for (let step = 0; step < 120; step++) {
      events.push(said(`step ${step} ${'s'.repeat(300)}`), call(`k${step}`, 'read'), result(`k${step}`, 'read', 'r'.repeat(90)))
      // The state changes every other step: each change is a note; the current one is always shown.
      const layout = layoutMessages({ instructions: 'sys', taskState: { half: Math.floor(step / 2) }, events, keepFrom, notes }, LIMITS)
      notes = layout.notes
      expect(layout.tokens).to.be.at.most(LIMITS.contextTokens)
      expect(JSON.stringify(layout.messages)).to.include(`{\\"half\\":${Math.floor(step / 2)}}`)
      expect(layout.messages.map((m) => (m as any).content)).to.include('THE INPUT')
      if (layout.dropped) drops.push(step)
      starts.push(layout.keepFrom)
      keepFrom = layout.keepFrom
    }
    // ~125 tokens a step against 4000: a drop to half the room every ~15 steps, never one per step.
    expect(drops.length).to.be.within(3, 12)
    for (let i = 1; i < drops.length; i++) expect(drops[i] - drops[i - 1]).to.be.at.least(8)
    // Between drops the start does not move: the prefix is the same.
    expect(new Set(starts).size).to.equal(drops.length + 1)
  })

  it('a start the read window has slid past, or a window kept from before a restart, is laid out again at once', () => {
    const events: SessionEvent[] = []
    for (let i = 0; i < 40; i++) events.push(user(`q${i}`), said(`a${i}`))
    const slid = layoutMessages({ instructions: 'sys', events: events.slice(20), unread: 20, keepFrom: 5 }, LIMITS)
    expect(slid.dropped).to.equal(true)
    expect(slid.keepFrom).to.be.at.least(20)
    const fresh = layoutMessages({ instructions: 'sys', events }, LIMITS)
    expect(fresh.keepFrom).to.equal(0)
    expect(fresh.dropped).to.equal(false)
  })

  it('cuts an input of a script dense in tokens (CJK: about one a character) to half the room in tokens, so it still fits', () => {
    // Counted as an endpoint counts CJK: one token a character (estimateTokens would say a quarter).
    const cjk = (message: ChatMessage) => 4 + ('content' in message && message.content ? message.content.length : 0)
    const text = '审查者阅读会话日志，逐条核对引用的序号与计划是否一致。'.repeat(1000)
    const layout = layoutMessages({ instructions: 'sys', events: [user('old'), user(text)] }, LIMITS, cjk)
    expect(layout.fits).to.equal(true)
    expect(layout.tokens).to.be.at.most(LIMITS.contextTokens)
    const input = layout.messages.find((m) => m.role === 'user' && m.content.startsWith('审查者')) as any
    expect(cjk(input)).to.be.at.most(LIMITS.contextTokens / 2)
    expect(input.content).to.match(/…\[cut: \d+ more characters not shown\]$/)
  })

  it('says when even the input and the task state cannot fit', () => {
    const layout = layoutMessages({ instructions: 'sys', taskState: { big: 'x'.repeat(5000) }, events: [user('go')] }, { ...LIMITS, contextTokens: 60, taskStateChars: 4000 })
    expect(layout.fits).to.equal(false)
    expect(layout.fixed).to.be.greaterThan(60)
  })

  it('shows refusals, model errors and command replies as host notes', () => {
    const messages = buildMessages({
      instructions: '', events: [user('/task new x'), ev('command/reply', { text: 'created' }), ev('agent/refused', { code: 'TOKEN_BUDGET_EXHAUSTED', message: 'm' })],
    }, LIMITS)
    expect(messages.slice(2).map((m) => (m as any).content)).to.deep.equal([
      '[host: command reply] {"text":"created"}',
      '[host: step refused] {"code":"TOKEN_BUDGET_EXHAUSTED","message":"m"}',
    ])
  })
})

describe('shrink (what the event window keeps)', () => {
  it('cuts long strings, long arrays and wide objects, keeps JSON valid and small values as they are', async () => {
    const { shrink } = await import('../src/context')
    const value = { path: 'a.txt', content: 'x'.repeat(10_000), files: Array.from({ length: 500 }, (_, i) => `f${i}`), n: 3, ok: true, none: null }
    const small = shrink(value, 100) as any
    expect(small.path).to.equal('a.txt')
    expect(small.content).to.match(/^x{100}\n…\[cut: 9900 more characters not shown\]$/)
    expect(small.files).to.have.length(201)
    expect(small.files.at(-1)).to.equal('…[300 more items not shown]')
    expect([small.n, small.ok, small.none]).to.deep.equal([3, true, null])
    expect(JSON.parse(JSON.stringify(small))).to.deep.equal(small)
    let deep: any = 'leaf'
    for (let i = 0; i < 50; i++) deep = { deep }
    expect(JSON.stringify(shrink(deep, 100))).to.include('nested too deep to show')
  })
})

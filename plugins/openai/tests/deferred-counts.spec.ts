import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { OpenAIMock, TestHost, mockText, mockTools, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { layoutMessages, shownTokens, type Layout } from '../src/context'
import { DeferredCounts, loadEncoding, textTokens, TokenCounter, tokenBound } from '../src/tokens'
import { WorkerTransport } from '../src/worker-transport'
import { KEY, runTurn, until } from './helpers'
import { ofType } from './loopback'

/*
 * Where the route's thread counts (the worker transport), a layout counts a text it has no count of
 * by its UTF-8 bytes, and the thread counts it once the request is sent. That is only right when the
 * bounds decided nothing (the layout is then the exact one, and its exact tokens come from the
 * thread's counts) and when the thread counts as the host's thread would.
 */
describe('plugin-openai: counts left to the route\'s thread', function () {
  this.timeout(20_000)

  it('a byte count bounds every count, CJK and long runs included, exact encoding or not', async () => {
    const encoder = await loadEncoding('o200k_base')
    const texts = ['', 'plain words here', '中文字符没有标点'.repeat(40), 'x'.repeat(5000), '!'.repeat(300), '😀🎉'.repeat(50), '<|endoftext|> and é\u0301', '{"path":"src/a.ts","text":"export const a = 1\\n"}']
    for (const text of texts) {
      expect(textTokens(encoder, text, true), text.slice(0, 20)).to.be.at.most(tokenBound(text))
      expect(textTokens(encoder, text, false), text.slice(0, 20)).to.be.at.most(tokenBound(text))
    }
  })

  it('a layout by bounds that fitted nothing is the exact one, and its counted texts give the exact tokens', async () => {
    let seq = 0
    const ev = (type: string, data: any): SessionEvent => ({ seq: seq++, type, time: 0, data })
    const exact = await new TokenCounter('qwen2.5-coder').ready()
    const bounded = await new TokenCounter('qwen2.5-coder').ready()
    const encoder = await loadEncoding('o200k_base')
    const exactOrigins = new WeakMap<object, SessionEvent>()
    const origins = new WeakMap<object, SessionEvent>()
    // Small enough that the window fills, drops, and fills again within the steps.
    const limits = { contextTokens: 2500, toolResultChars: 600, taskStateChars: 400 }
    const events: SessionEvent[] = [ev('user/message', { text: '请写报告 write the report' })]
    let kept: Pick<Layout, 'keepFrom' | 'notes'> | undefined
    let same = 0
    let redone = 0
    for (let step = 0; step < 40; step++) {
      events.push(ev('assistant/message', { text: `step ${step}: 读取下一个文件 reading the next file` }))
      events.push(ev('tool/call', { callId: `c${step}`, name: 'read', args: { path: `src/part-${step}.ts` } }))
      events.push(ev('tool/result', { callId: `c${step}`, name: 'read', result: { text: `export const part${step} = '${'值'.repeat(step % 7)}'\n`.repeat(step % 3 ? 2 : 12) } }))
      if (step % 6 === 5) events.push(ev('user/message', { text: `now part ${step} again, ${'more detail '.repeat(step)}` }))
      const input = { instructions: 'You write reports.', events: [...events], taskState: { phase: 'active', step: Math.floor(step / 4) }, ...kept }
      const truth = layoutMessages({ ...input, origins: exactOrigins }, limits, (message) => exact.message(message, exactOrigins))
      const deferred = new DeferredCounts()
      const layout = layoutMessages({ ...input, origins }, limits, (message) => bounded.message(message, origins, deferred))
      if (deferred.bounded && (layout.fitted || !layout.fits)) {
        // What the route does then: lay out again, counting here.
        redone++
        const again = layoutMessages({ ...input, origins }, limits, (message) => bounded.message(message, origins))
        expect(again.messages, `step ${step}`).to.deep.equal(truth.messages)
        expect(again.tokens).to.equal(truth.tokens)
      } else {
        same++
        expect(layout.messages, `step ${step}`).to.deep.equal(truth.messages)
        expect([layout.keepFrom, layout.notes, layout.dropped]).to.deep.equal([truth.keepFrom, truth.notes, truth.dropped])
        // The thread's counts, in the order of the texts.
        bounded.settle(deferred, deferred.texts.map((text) => textTokens(encoder, text, false)))
        expect(shownTokens(layout, (message) => bounded.message(message, origins)), `step ${step}`).to.equal(truth.tokens)
      }
      kept = { keepFrom: truth.keepFrom, notes: truth.notes }
    }
    // Both ways were taken (else the limits above test one of them only).
    expect(same).to.be.greaterThan(10)
    expect(redone).to.be.greaterThan(2)
  })

  it('counts the thread did not send are made on the host\'s thread: the same counts kept', async () => {
    const counter = await new TokenCounter('gpt-4o').ready()
    const deferred = new DeferredCounts()
    const text = 'a new tool result that nobody counted yet'
    expect(counter.count(text, deferred)).to.equal(tokenBound(text))
    expect(deferred.texts).to.deep.equal([text])
    // None, too few, or not counts at all: counted here.
    counter.settle(deferred, [1, 2])
    expect(counter.count(text)).to.equal(textTokens(await loadEncoding('o200k_base'), text, true))
  })

  it('the worker thread counts as the host\'s thread does, once the request is sent', async () => {
    const mock = await OpenAIMock.start()
    const log = { warn: (text: string) => { throw new Error(text) }, debug: () => {} }
    const encoder = await loadEncoding('o200k_base')
    const texts = ['plain words here', '中文字符没有标点'.repeat(40), 'x'.repeat(5000), '!'.repeat(300), '😀🎉'.repeat(50), '<|endoftext|> and é\u0301', '{"path":"src/a.ts"}']
    for (const exact of [true, false]) {
      const transport = new WorkerTransport({ route: 't', apiKey: KEY, baseURL: mock.baseURL, timeoutMs: 5000, maxRetries: 0 }, log, { encoding: 'o200k_base', exact })
      try {
        expect(transport.countsTexts).to.equal(true)
        mock.script(mockText('ok'))
        let counts: number[] | undefined
        const stream = await transport.open({
          body: { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }, signal: new AbortController().signal, refused: {},
          count: { texts, onCounts: (made) => { counts = made } },
        })
        for await (const chunk of stream) void chunk
        expect(counts).to.deep.equal(texts.map((text) => textTokens(encoder, text, exact)))
      } finally {
        transport.close()
      }
    }
    await mock.close()
  })

  describe('a turn through the route', () => {
    let mock: OpenAIMock
    let cwd: string
    const hosts: TestHost[] = []

    beforeEach(async () => {
      mock = await OpenAIMock.start()
      // Unpunctuated CJK: the estimate of a model that is not OpenAI's counts it one token a character at least.
      cwd = await tempWorkspace({ 'notes.md': '# notes\n' + 'こんにちは我们的'.repeat(150) + '\nand English notes.\n' })
    })
    afterEach(async () => {
      for (const host of hosts.splice(0)) await host.dispose()
      await mock.close()
      await removeTree(cwd)
    })

    /** The prompt tokens each step of one scripted turn was charged (no usage reported: the estimate) on a route of `transport`. */
    async function estimates(transport: 'worker' | 'inline') {
      const host = await TestHost.boot({
        plugins: [[OpenAIPlugin, { transport, routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'qwen2.5-coder', maxRetries: 0 }] }]],
      })
      hosts.push(host)
      await until(() => host.ctx.models.routes().includes('mock'))
      const agent = await host.ctx.agents.create({ cwd, model: 'mock', role: 'main' })
      mock.script(
        { ...mockTools(['read', { path: 'notes.md' }]), usage: false },
        { ...mockTools(['read', { path: 'notes.md' }]), usage: false },
        mockText('read it twice.', { usage: false }),
      )
      const settle = TokenCounter.prototype.settle
      const fromThread: number[][] = []
      TokenCounter.prototype.settle = function (this: TokenCounter, deferred: DeferredCounts, counts?: readonly number[]) {
        if (counts) fromThread.push([...counts])
        return settle.call(this, deferred, counts)
      }
      let turn: Awaited<ReturnType<typeof runTurn>>
      try {
        turn = await runTurn(host, agent, 'read the notes, twice')
      } finally {
        TokenCounter.prototype.settle = settle
      }
      const { summary, events } = turn
      expect(summary.error).to.equal(undefined)
      // Every step had new texts (the input, a tool result): the worker's route left them to its thread.
      expect(fromThread.length).to.equal(transport === 'worker' ? 3 : 0)
      return ofType(events, 'model/usage').map((event) => [event.data.promptTokens, event.data.estimated])
    }

    it('charges each step the same estimate whether its new texts were counted by the route\'s thread or here', async () => {
      const byWorker = await estimates('worker')
      const inline = await estimates('inline')
      expect(byWorker).to.have.length(3)
      expect(byWorker).to.deep.equal(inline)
    })
  })
})

/**
 * OpenAI adapter benchmark, against the loopback mock (real HTTP, SSE as the API frames it), with
 * baselines measured in the same run:
 *   1. step:  MODEL_BENCH_STEPS (default 200) `adapter.step` calls of a real host session (context
 *             built from the log, SDK request, stream assembled) vs. a bare `fetch` of the same mock
 *             response with the same body, its text read whole. No goal: issue 20 withdrew the old
 *             ≤ 1.1× (the official SDK alone is more; its retries, types and upkeep are kept). A third
 *             line times the SDK alone (same body, stream iterated, nothing else), to show which share is the SDK's.
 *   2. first text: time from the mock writing its first byte to the first `delta` event a client of
 *             the session's live stream (`GET /api/sessions/:id/stream`, real HTTP, served by the
 *             console) has read, median over MODEL_BENCH_TURNS (default 50) agent turns; printed
 *             beside it, the time to the host's `agent/text-delta` (where the stream starts). Goal: ≤ 50 ms.
 */
import { performance } from 'node:perf_hooks'
import { tmpdir } from 'node:os'
import OpenAI from 'openai'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { OpenAIMock, TestHost, mockText } from '@taskward/testkit'
import { WebConsole } from '@taskward/plugin-console'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { Goals } from './goals'

const STEPS = Number(process.env.MODEL_BENCH_STEPS ?? 200)
const TURNS = Number(process.env.MODEL_BENCH_TURNS ?? 50)
if (!(Number.isSafeInteger(STEPS) && STEPS > 0 && Number.isSafeInteger(TURNS) && TURNS > 0)) {
  console.error('MODEL_BENCH_STEPS and MODEL_BENCH_TURNS must be positive integers.')
  process.exit(1)
}

const ANSWER = 'The quick brown fox jumps over the lazy dog. '.repeat(40)
const reply = () => mockText(ANSWER, { chunkSize: 45, usage: { prompt_tokens: 500, completion_tokens: 400 } })

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const mock = await OpenAIMock.start()
const host = await TestHost.boot({
  plugins: [
    [OpenAIPlugin, { routes: [{ route: 'bench', baseURL: mock.baseURL, apiKey: 'sk-bench', model: 'bench', maxRetries: 0 }] }],
    [SupervisorPlugin, { automaticContinuation: false }],
    [WebConsole, { demo: false }],
  ],
  waitFor: ['supervisor', 'webConsole'],
})
try {
  while (!host.ctx.models.routes().includes('bench')) await new Promise((resolve) => setTimeout(resolve, 10))
  const adapter = host.ctx.models.get('bench') as OpenAIPlugin.OpenAIRoute
  const session = await host.ctx.sessions.create({ cwd: tmpdir() })
  for (let i = 0; i < 20; i++) {
    await session.append('user/message', { text: `question ${i}` })
    await session.append('assistant/message', { text: `answer ${i} ${ANSWER.slice(0, 300)}` })
  }
  const request = () => ({
    session, role: 'main', input: { text: 'go', meta: {} }, results: [], step: 0, signal: new AbortController().signal,
  })
  // The baseline sends exactly what the adapter sends.
  mock.script(reply())
  await adapter.step(request())
  const body = JSON.stringify(mock.requests.at(-1)!.body)

  const bare = async () => {
    const response = await fetch(`${mock.baseURL}/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body,
    })
    const text = await response.text()
    if (!text.includes('[DONE]')) throw new Error('the bare fetch did not read the whole stream')
  }
  const ours = async () => {
    const step = await adapter.step(request())
    if (step.text !== ANSWER) throw new Error('the adapter lost text')
  }
  // The floor of any streaming client: the same fetch, the SSE frames split and each chunk parsed.
  const bareParsed = async () => {
    const response = await fetch(`${mock.baseURL}/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body,
    })
    let text = ''
    for (const frame of (await response.text()).split('\n\n')) {
      if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue
      text += JSON.parse(frame.slice(6)).choices[0]?.delta?.content ?? ''
    }
    if (text !== ANSWER) throw new Error('the parsed baseline lost text')
  }
  // The same SDK on this thread: what the route's stream costs when no thread carries it.
  const sdk = new OpenAI({ baseURL: mock.baseURL, apiKey: 'sk-bench', maxRetries: 0 })
  const sdkOnly = async () => {
    const stream = await sdk.chat.completions.create(JSON.parse(body))
    for await (const _ of stream as any);
  }
  // Warm every path, then interleave rounds so that machine noise hits them alike.
  for (let i = 0; i < 10; i++) {
    mock.script(reply(), reply(), reply(), reply())
    await bare()
    await ours()
    await sdkOnly()
    await bareParsed()
  }
  const oursMs: number[] = []
  const bareMs: number[] = []
  const sdkMs: number[] = []
  const parsedMs: number[] = []
  for (let i = 0; i < STEPS; i++) {
    mock.script(reply(), reply(), reply(), reply())
    let start = performance.now()
    await bare()
    bareMs.push(performance.now() - start)
    start = performance.now()
    await ours()
    oursMs.push(performance.now() - start)
    start = performance.now()
    await sdkOnly()
    sdkMs.push(performance.now() - start)
    start = performance.now()
    await bareParsed()
    parsedMs.push(performance.now() - start)
  }

  // 2. First byte → first text delta, through an agent turn, as a client of the live stream reads it.
  const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'bench', role: 'main' })
  const stream = await fetch(`${host.url}/api/sessions/${agent.session.id}/stream`, { headers: { authorization: `Bearer ${host.operatorToken}` } })
  if (!stream.ok || !stream.body) throw new Error(`the live stream answered ${stream.status}`)
  const reader = stream.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffered = ''
  /** Reads frames until one satisfies `wanted`; resolves with the time the client read it. */
  const readUntil = async (wanted: (frame: string) => boolean) => {
    while (true) {
      const end = buffered.indexOf('\n\n')
      if (end >= 0) {
        const frame = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        if (wanted(frame)) return performance.now()
        continue
      }
      const { value, done } = await reader.read()
      if (done) throw new Error('the live stream ended')
      buffered += value
    }
  }
  const firstText: number[] = []
  const firstEmit: number[] = []
  for (let i = 0; i < TURNS; i++) {
    let firstDelta: number | undefined
    const off = host.ctx.on('agent/text-delta', (who) => {
      if (who === agent) firstDelta ??= performance.now()
    })
    mock.script(reply())
    const seen = readUntil((frame) => frame.startsWith('event: delta'))
    agent.followup(`turn ${i}`)
    const readAt = await seen
    await agent.whenIdle()
    off()
    // The rest of this turn's frames, up to its recorded answer, before the next turn starts.
    await readUntil((frame) => frame.startsWith('event: event') && frame.includes('"type":"assistant/message"'))
    const firstByte = mock.requests.at(-1)!.firstByteAt!
    if (firstDelta === undefined) throw new Error('no text delta was emitted')
    firstText.push(readAt - firstByte)
    firstEmit.push(firstDelta - firstByte)
  }
  await reader.cancel()

  const step = median(oursMs)
  const base = median(bareMs)
  const table = [
    ['measure', 'ours', 'baseline', 'ratio'],
    [`step, ${ANSWER.length} chars in ${Math.ceil(ANSWER.length / 45)} chunks (median of ${STEPS})`, `${step.toFixed(2)} ms adapter.step`, `${base.toFixed(2)} ms bare fetch`, `${(step / base).toFixed(2)}x (no goal; +${(step - base).toFixed(2)} ms a step)`],
    [`  of which the SDK alone (same body, stream iterated)`, `${median(sdkMs).toFixed(2)} ms SDK only`, `${base.toFixed(2)} ms bare fetch`, `${(median(sdkMs) / base).toFixed(2)}x; adapter vs SDK ${(step / median(sdkMs)).toFixed(2)}x`],
    [`  bare fetch + SSE frames parsed (any streaming client's floor)`, `${median(parsedMs).toFixed(2)} ms`, `${base.toFixed(2)} ms bare fetch`, `${(median(parsedMs) / base).toFixed(2)}x; adapter vs it ${(step / median(parsedMs)).toFixed(2)}x`],
    [`mock first byte → first delta read from the live stream (median of ${TURNS})`, `${median(firstText).toFixed(2)} ms`, `${median(firstEmit).toFixed(2)} ms to the host's agent/text-delta`, `goal ≤ 50 ms (p90 ${[...firstText].sort((a, b) => a - b)[Math.floor(TURNS * 0.9)].toFixed(2)} ms)`],
  ]
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)))
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '))
  const goals = new Goals()
  goals.check('mock first byte to first text at a live-stream client', median(firstText) <= 50, `${median(firstText).toFixed(2)} ms median, goal <= 50 ms`)
  goals.report()
} finally {
  await host.dispose()
  await mock.close()
}

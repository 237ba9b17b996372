/**
 * Console live-stream benchmark (`npm run bench -- console`), on a real host, measured against a
 * baseline in the same run:
 *   delta latency: a model adapter hands a text delta to the agent (`request.onText`) and waits until an
 *                  HTTP client reading the console's SSE stream (`/api/console/sessions/:id/events`) has it,
 *                  CONSOLE_BENCH_DELTAS times (default 200), one at a time
 *             vs.  a bare node:http SSE server writing the same frame to a fetch() reader (the loopback floor).
 * Goal: the median time from the adapter's delta to the text on the stream stays ≤ 50 ms.
 */
import { createServer, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { TestHost } from '@taskward/testkit'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { WebConsole } from '../plugins/console/src'
import { quantile } from '@taskward/protocol'

const DELTAS = Number(process.env.CONSOLE_BENCH_DELTAS ?? 200)
if (!(Number.isSafeInteger(DELTAS) && DELTAS > 0)) {
  console.error('CONSOLE_BENCH_DELTAS must be a positive integer.')
  process.exit(1)
}
const GOAL_MS = 50

const now = () => Number(process.hrtime.bigint()) / 1e6

/** Reads an SSE body and resolves the waiter of each `d<i>|` delta as soon as its frame arrives. */
function deltaReader(body: ReadableStream<Uint8Array>) {
  const waiters = new Map<number, () => void>()
  const seen = new Set<number>()
  const decoder = new TextDecoder()
  let buffer = ''
  ;(async () => {
    const reader = body.getReader()
    while (true) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const match = /^event: delta\ndata: (.*)$/m.exec(frame)
        if (!match) continue
        const index = Number(/^d(\d+)\|$/.exec(JSON.parse(match[1]).delta)?.[1])
        seen.add(index)
        waiters.get(index)?.()
      }
    }
  })().catch(() => {})
  return (index: number) => new Promise<void>((resolve) => seen.has(index) ? resolve() : waiters.set(index, resolve))
}

async function measureConsole(): Promise<number[]> {
  const host = await TestHost.boot({
    plugins: [[SupervisorPlugin, { automaticContinuation: false }], [WebConsole, { demo: false }]],
    waitFor: ['supervisor', 'webConsole'],
  })
  try {
    const latencies: number[] = []
    let received!: (index: number) => Promise<void>
    let finished!: () => void
    const done = new Promise<void>((resolve) => finished = resolve)
    host.ctx.models.register('bench-stream', {
      async step(request) {
        for (let i = 0; i < DELTAS; i++) {
          const started = now()
          request.onText?.(`d${i}|`)
          await received(i)
          latencies.push(now() - started)
        }
        finished()
        return { text: 'done' }
      },
    })
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'bench-stream', role: 'main' })
    const abort = new AbortController()
    const response = await host.http.fetch(`/api/console/sessions/${agent.id}/events`, { signal: abort.signal })
    received = deltaReader(response.body!)
    agent.followup('stream')
    await done
    await agent.whenIdle()
    abort.abort()
    return latencies
  } finally {
    await host.dispose()
  }
}

async function measureBare(): Promise<number[]> {
  let client!: ServerResponse
  const bare: { received?: (i: number) => Promise<void>, close?: () => void } = {}
  const connected = new Promise<void>((resolve) => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
      res.flushHeaders()
      client = res
      resolve()
    })
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      fetch(`http://127.0.0.1:${port}/`).then((response) => { bare.received = deltaReader(response.body!) })
    })
    bare.close = () => {
      client?.destroy()
      server.close()
    }
  })
  await connected
  while (!bare.received) await new Promise((resolve) => setTimeout(resolve, 1))
  const latencies: number[] = []
  for (let i = 0; i < DELTAS; i++) {
    const started = now()
    client.write(`event: delta\ndata: ${JSON.stringify({ delta: `d${i}|` })}\n\n`)
    await bare.received(i)
    latencies.push(now() - started)
  }
  bare.close!()
  return latencies
}

const baseline = await measureBare()
const measured = await measureConsole()
const [medianConsole, medianBare] = [quantile(measured, 0.5), quantile(baseline, 0.5)]
console.log(`delta latency over ${DELTAS} deltas, adapter → console SSE reader:`)
console.log(`  console live stream  median ${medianConsole.toFixed(3)} ms, p95 ${quantile(measured, 0.95).toFixed(3)} ms, max ${Math.max(...measured).toFixed(3)} ms`)
console.log(`  bare node:http SSE   median ${medianBare.toFixed(3)} ms, p95 ${quantile(baseline, 0.95).toFixed(3)} ms`)
console.log(`  ratio (median) ${(medianConsole / medianBare).toFixed(2)}×; goal median ≤ ${GOAL_MS} ms: ${medianConsole <= GOAL_MS ? 'met' : 'NOT met'}`)
process.exit(medianConsole <= GOAL_MS ? 0 : 1)

/**
 * What a long task meets on a real endpoint, against the loopback mock (real HTTP, SSE; the mock counts
 * tokens itself: packages/testkit/src/mock-tokens.ts renders each request as a chat template would and
 * encodes it with js-tiktoken — cl100k_base for non-OpenAI models, o200k_base for gpt-* —, a different
 * library and, for non-OpenAI models, a different encoding than the adapter's gpt-tokenizer o200k_base):
 *
 *   1. prefix reuse: a scripted supervised task of MODEL_BENCH_NODES (default 7) nodes (~39 main-agent
 *      steps: each node reads a file, writes one, reports), every agent on the adapter (taskPlayer),
 *      against a vLLM-like endpoint that refuses past its context. For each main-agent request after the
 *      first, the byte prefix it shares with the previous main-agent request (tools + messages
 *      serialized), as a share of the request, printed with the steps at which the window dropped
 *      entries. Goals (median ≥ 90 %, p10 ≥ 70 %) on a 16k window (contextTokens 16000), which fills and drops
 *      during the task; printed too, without a goal, for an 8k endpoint whose size is discovered.
 *   2. estimate error: estimated / reported prompt tokens of English, code and CJK sessions, for a route
 *      of a model the adapter has no tokenizer for (qwen: o200k_base × a ratio calibrated from the
 *      endpoint's usage; the mock counts cl100k_base) and one it has (gpt-4o: exact; what is measured is
 *      then only the framing and tool overhead, since both count o200k_base). Each session runs
 *      MODEL_BENCH_ESTIMATE_STEPS (default 6) steps; the ratio of the last step (calibrated on the steps
 *      before) is the goal's, 0.9–1.3×; the first step's (uncalibrated) is printed beside it.
 */
import { tmpdir } from 'node:os'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { OpenAIMock, TestHost, mockText, removeTree, taskPlayer, tempWorkspace } from '@taskward/testkit'
import { Goals } from './goals'
import { quantile } from '@taskward/protocol'

const NODES = Number(process.env.MODEL_BENCH_NODES ?? 7)
const ESTIMATE_STEPS = Number(process.env.MODEL_BENCH_ESTIMATE_STEPS ?? 6)
if (!(Number.isSafeInteger(NODES) && NODES > 0 && Number.isSafeInteger(ESTIMATE_STEPS) && ESTIMATE_STEPS > 1)) {
  console.error('MODEL_BENCH_NODES must be a positive integer and MODEL_BENCH_ESTIMATE_STEPS an integer above 1.')
  process.exit(1)
}

const pct = (value: number) => `${(value * 100).toFixed(1)} %`
const until = async (check: () => Promise<boolean>, what: string, timeout = 120_000) => {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const goals = new Goals()

// 1. Prefix reuse over a whole task, on a route of `window` tokens (undefined: discovered from the endpoint).
async function prefixRun(label: string, endpointTokens: number, window: number | undefined, withGoals: boolean) {
  const mock = await OpenAIMock.start()
  mock.context = { tokens: endpointTokens, dialect: 'vllm', discoverable: window === undefined, model: 'qwen2.5-coder' }
  const nodes = Array.from({ length: NODES }, (_, i) => ({ id: `n${i}`, title: `write n${i}`, ...(i ? { dependsOn: [`n${i - 1}`] } : {}) }))
  mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['each node writes its file'], nodes }, read: 'notes.md' })
  const cwd = await tempWorkspace()
  // A file each node reads first: what a real task's tool results are (cut at toolResultChars).
  await writeFile(join(cwd, 'notes.md'), Array.from({ length: 120 }, (_, i) => `- note ${i}: the scheduler keeps node ${i % 9} waiting until its review passes.`).join('\n'))
  const host = await TestHost.boot({
    plugins: [
      [SupervisorPlugin, { defaultModel: 'openai', reviewerModel: 'openai', automaticContinuation: true }],
      [OpenAIPlugin, { routes: [{ route: 'local', baseURL: mock.baseURL, apiKey: 'sk-bench', model: 'qwen2.5-coder', maxRetries: 0 }], context: window ? { contextTokens: window } : {} }],
    ],
    waitFor: ['supervisor'],
  })
  try {
    while (!host.ctx.models.routes().includes('openai')) await new Promise((resolve) => setTimeout(resolve, 10))
    const supervisor = (host.ctx as any).supervisor
    const { session } = await supervisor.startSession({ cwd, model: 'openai' })
    await host.ctx.commands.input(session, `/task new write ${NODES} files, one per node`)
    await until(async () => (await supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan')
    await host.ctx.commands.input(session, '/task approve')
    await until(async () => ['complete', 'paused'].includes((await supervisor.state(session)).current?.phase), 'the task to end')
    const phase = (await supervisor.state(session)).current?.phase
    const main = mock.requests.filter((r) => String(r.body.messages?.[0]?.content ?? '').includes('You are the main agent'))
    const serialized = main.map((r) => JSON.stringify({ tools: r.body.tools ?? [], messages: r.body.messages }))
    const shares: number[] = []
    const drops: number[] = []
    const start = (r: (typeof main)[number]) => /entries before seq (\d+) are not shown/.exec(JSON.stringify(r.body.messages))?.[1]
    for (let i = 1; i < serialized.length; i++) {
      const [a, b] = [serialized[i - 1], serialized[i]]
      let same = 0
      const limit = Math.min(a.length, b.length)
      while (same < limit && a.charCodeAt(same) === b.charCodeAt(same)) same++
      shares.push(same / b.length)
      if (start(main[i]) !== start(main[i - 1])) drops.push(i)
    }
    const over = main.filter((r) => (r.promptTokens ?? 0) > endpointTokens).length
    const usage = (await session.read({ from: 0, limit: 100_000 })).filter((e: any) => e.type === 'model/usage')
    const prompt = usage.reduce((sum: number, e: any) => sum + e.data.promptTokens, 0)
    const hit = usage.reduce((sum: number, e: any) => sum + (e.data.cachedTokens ?? 0), 0)
    const [median, p10] = [quantile(shares, 0.5), quantile(shares, 0.1)]
    console.log(`prefix reuse, ${label}: a ${NODES}-node task (${phase}), ${main.length} main-agent requests, ${over} over the endpoint's ${endpointTokens} tokens`)
    console.log(`  byte prefix shared with the previous main request: median ${pct(median)}, p10 ${pct(p10)}, min ${pct(Math.min(...shares))}`)
    console.log(`  window dropped entries at main steps: ${drops.join(', ') || 'none'}; largest request ${Math.max(...main.map((r) => r.promptTokens ?? 0))} tokens (mock count)`)
    console.log(`  main-session prompt tokens served from the endpoint's prefix cache (model/usage cachedTokens): ${hit} of ${prompt} (${pct(hit / prompt)})`)
    goals.check(`task completed (${label})`, phase === 'complete' && over === 0, `phase ${phase}, ${over} requests over the context`)
    if (withGoals) {
      goals.check(`prefix reuse, median (${label})`, median >= 0.9, `${pct(median)}, goal >= 90 %`)
      goals.check(`prefix reuse, p10 (${label})`, p10 >= 0.7, `${pct(p10)}, goal >= 70 %`)
    } else {
      console.log(`  (no goal here: after a drop to half of an 8k window, one node's ~2,800 tokens fill it again, so every node's first step is a drop: ${pct(drops.length / shares.length)} of steps, which is the p10)`)
    }
  } finally {
    await host.dispose()
    await mock.close()
    await removeTree(cwd)
  }
}

await prefixRun('16k window, 32k endpoint', 32768, 16000, true)
await prefixRun('8k endpoint, context discovered from /v1/models', 8192, undefined, false)

// 2. Estimate error per kind of text.
{
  const kinds: Record<string, (i: number) => string> = {
    English: (i) => `Step ${i}: the reviewer reads the log, checks each cited seq against the plan, and records a verdict with its findings. `.repeat(20),
    code: (i) => `function step${i}(state: Task): Task {\n  const ready = state.nodes.filter((n) => n.dependsOn.every((d) => passed.has(d)))\n  return { ...state, readyNodes: ready.map((n) => n.id), revision: state.revision + ${i} }\n}\n`.repeat(10),
    CJK: (i) => `第${i}步：审查者阅读会话日志，逐条核对引用的序号与计划是否一致，然后记录结论和发现的问题。`.repeat(20),
  }
  const mock = await OpenAIMock.start()
  mock.context = { tokens: 1_000_000, dialect: 'openai' }
  const routes = Object.keys(kinds).flatMap((kind) => [
    { route: `qwen-${kind.toLowerCase()}`, baseURL: mock.baseURL, apiKey: 'sk-bench', model: 'qwen2.5-coder', maxRetries: 0 },
    { route: `gpt-${kind.toLowerCase()}`, baseURL: mock.baseURL, apiKey: 'sk-bench', model: 'gpt-4o', maxRetries: 0 },
  ])
  const host = await TestHost.boot({ plugins: [[OpenAIPlugin, { routes, context: { contextTokens: 100_000 } }]] })
  try {
    while (!host.ctx.models.routes().includes(routes.at(-1)!.route)) await new Promise((resolve) => setTimeout(resolve, 10))
    console.log('estimate error: estimated / reported prompt tokens (the mock counts its own way: see the header)')
    for (const [kind, text] of Object.entries(kinds)) {
      for (const family of ['qwen', 'gpt']) {
        const adapter = host.ctx.models.get(`${family}-${kind.toLowerCase()}`) as OpenAIPlugin.OpenAIRoute
        const session = await host.ctx.sessions.create({ cwd: tmpdir() })
        const ratios: number[] = []
        for (let step = 0; step < ESTIMATE_STEPS; step++) {
          await session.append('user/message', { text: text(step) })
          mock.script(mockText(text(step + 100)))
          const answer = await adapter.step({ session, role: 'main', input: { text: '', meta: {} }, results: [], step: 0, signal: new AbortController().signal })
          await session.append('assistant/message', { text: answer.text })
          await session.append('model/usage', { route: 'x', step: 0, ...answer.usage })
          ratios.push(answer.estimatedPromptTokens! / answer.usage!.promptTokens)
        }
        const last = ratios.at(-1)!
        const tokens = mock.requests.at(-1)!.promptTokens!
        // The baseline: main's estimate of the same request, ≈ 4 characters a token of the messages, tools left out.
        const before = Math.ceil(JSON.stringify(mock.requests.at(-1)!.body.messages).length / 4) / tokens
        console.log(`  ${kind.padEnd(7)} ${family === 'qwen' ? 'qwen2.5-coder (estimate, calibrated)' : 'gpt-4o (exact encoding)          '}  last ${last.toFixed(3)}x  first ${ratios[0].toFixed(3)}x  (${tokens} tokens reported; main's estimate ${before.toFixed(3)}x)`)
        goals.check(`estimate error, ${kind}, ${family}`, last >= 0.9 && last <= 1.3, `${last.toFixed(3)}x, goal 0.9–1.3x`)
      }
    }
  } finally {
    await host.dispose()
    await mock.close()
  }
}

goals.report()

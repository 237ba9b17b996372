/**
 * What the window does with a tool result larger than the model's context (issue 29), against the loopback
 * mock (real HTTP, SSE, tokens counted by the mock its own way: see model-context.bench.ts):
 *
 *   oversized file: a one-node supervised task whose node reads a 6,018-character Chinese file (≈ 5,500
 *   tokens) on a vLLM-like endpoint whose context is 4,653 tokens (discovered from /v1/models), every
 *   agent on the adapter (taskPlayer: read, write, report). Printed: main-agent requests until the node's
 *   stage report (goal ≤ 8; the issue measured 132, stopped by a progress review), prompt tokens the
 *   task spent (main and reviewer sessions), and how many requests the server refused (goal: none).
 *   restart: a three-node task driven by /task approve and /task resume (no automatic continuation); once
 *   the first node passed and every agent is idle, the host restarts (same data, same endpoint) and
 *   /task resume continues. Printed: the byte prefix (tools + messages serialized) the first main request
 *   after the restart shares with the last one before it, as a share of the request (goal ≥ 90 %), and the
 *   prompt tokens the endpoint's prefix cache served for it.
 *   short task: a one-node task (plan, review, start, write, report, review, completion: ~8 main-agent
 *   steps with reviews between them) on a 32k endpoint, every agent on the adapter, run MODEL_BENCH_SHORT_RUNS
 *   (default 3) times. Printed: the byte prefix each main request shares with the previous one, as a share
 *   of the request — median (goal ≥ 90 %) and min over all runs.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { OpenAIMock, TestHost, removeTree, taskPlayer, tempWorkspace, type MockRequest } from '@taskward/testkit'
import { Goals } from './goals'

const goals = new Goals()
const CONTEXT = 4653
const FILE_CHARS = 6018

const ENDS_WITHIN_MS = Number(process.env.MODEL_BENCH_TASK_MS ?? 60_000)

/** Waits for `check`; past `timeout`, throws (or, `strict` false, returns false). */
const until = async (check: () => Promise<boolean>, what: string, timeout = 120_000, strict = true) => {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) {
      if (strict) throw new Error(`timed out waiting for ${what}`)
      return false
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return true
}

const isMain = (request: MockRequest) => String(request.body.messages?.[0]?.content ?? '').includes('You are the main agent')
const called = (request: MockRequest, name: string) => !!request.reply && 'toolCalls' in request.reply && !!request.reply.toolCalls?.some((call) => call.name === name)

/** A Chinese text of `chars` characters, numbered lines (the shape of the issue's file). */
function chineseFile(chars: number) {
  let text = ''
  for (let i = 0; text.length < chars; i++) text += `第${i}行：调度器在审查通过之前让节点等待，然后按照依赖关系选择下一个就绪的节点。\n`
  return text.slice(0, chars)
}

{
  const mock = await OpenAIMock.start()
  mock.context = { tokens: CONTEXT, dialect: 'vllm', discoverable: true, model: 'qwen2.5-coder' }
  mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['a is written'], nodes: [{ id: 'a', title: 'write a' }] }, read: 'big.md' })
  const cwd = await tempWorkspace()
  await writeFile(join(cwd, 'big.md'), chineseFile(FILE_CHARS))
  const host = await hostOn(mock, true)
  try {
    const supervisor = (host.ctx as any).supervisor
    const { session } = await supervisor.startSession({ cwd, model: 'openai' })
    await host.ctx.commands.input(session, '/task new write a after reading big.md')
    await until(async () => (await supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan')
    await host.ctx.commands.input(session, '/task approve')
    // Not thrown: a task that loops (what this case was before issue 29) is reported with its figures.
    const ended = await until(async () => ['complete', 'paused'].includes((await supervisor.state(session)).current?.phase), 'the task to end', ENDS_WITHIN_MS, false)
    const task = (await supervisor.state(session)).current
    const main = mock.requests.filter(isMain)
    const report = main.findIndex((request) => called(request, 'task_report_stage'))
    const refused = mock.requests.filter((request) => (request.promptTokens ?? 0) > CONTEXT).length
    const reads = main.filter((request) => called(request, 'read')).length
    const prompt = mock.requests.reduce((sum, request) => sum + (request.promptTokens ?? 0), 0)
    const mainPrompt = main.reduce((sum, request) => sum + (request.promptTokens ?? 0), 0)
    console.log(`oversized file: ${FILE_CHARS} Chinese characters read by a node, on a ${CONTEXT}-token vLLM (context discovered)`)
    console.log(`  task ${task.phase}${task.pauseReason ? ` (${task.pauseReason})` : ''}${ended ? '' : ` after ${ENDS_WITHIN_MS / 1000} s (stopped waiting)`}; ${main.length} main-agent requests in all, ${reads} of them read the file`)
    console.log(`  main-agent requests until the node's stage report: ${report < 0 ? 'never' : report + 1}`)
    console.log(`  prompt tokens spent (mock count): ${prompt} in ${mock.requests.length} requests (main agent ${mainPrompt})`)
    console.log(`  requests the server refused: ${refused}`)
    goals.check('oversized file: main requests until the stage report', report >= 0 && report + 1 <= 8, `${report < 0 ? 'never' : report + 1}, goal <= 8`)
    goals.check('oversized file: requests refused by the server', refused === 0, `${refused}, goal none`)
  } finally {
    await host.dispose()
    await mock.close()
    await removeTree(cwd)
  }
}

const serialized = (request: MockRequest) => JSON.stringify({ tools: request.body.tools ?? [], messages: request.body.messages })
/** A host whose sessions and reviewers use the mock's endpoint (route `openai`), once that route is up. */
async function hostOn(mock: OpenAIMock, automaticContinuation: boolean) {
  const host = await TestHost.boot({
    plugins: [
      [SupervisorPlugin, { defaultModel: 'openai', reviewerModel: 'openai', automaticContinuation }],
      [OpenAIPlugin, { routes: [{ route: 'local', baseURL: mock.baseURL, apiKey: 'sk-bench', model: 'qwen2.5-coder', maxRetries: 0 }] }],
    ],
    waitFor: ['supervisor'],
  })
  while (!host.ctx.models.routes().includes('openai')) await new Promise((resolve) => setTimeout(resolve, 10))
  return host
}

const pct = (value: number) => `${(value * 100).toFixed(1)} %`

{
  const mock = await OpenAIMock.start()
  mock.context = { tokens: 32768, dialect: 'vllm', discoverable: true, model: 'qwen2.5-coder' }
  const nodes = ['n0', 'n1', 'n2'].map((id, i) => ({ id, title: `write ${id}`, ...(i ? { dependsOn: [`n${i - 1}`] } : {}) }))
  mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['each node writes its file'], nodes } })
  const cwd = await tempWorkspace()
  const host = await hostOn(mock, false)
  const idle = () => until(async () => host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued), 'idle agents')
  try {
    const supervisor = () => (host.ctx as any).supervisor
    const { session } = await supervisor().startSession({ cwd, model: 'openai' })
    await host.ctx.commands.input(session, '/task new write three files, one per node')
    // Without automatic continuation, /task resume follows up once.
    await host.ctx.commands.input(session, '/task resume')
    await until(async () => (await supervisor().state(session)).current?.phase === 'awaiting-approval', 'the plan')
    await idle()
    await host.ctx.commands.input(session, '/task approve')
    await idle()
    if ((await supervisor().state(session)).current?.nodeRuns?.n0?.status === 'pending') await host.ctx.commands.input(session, '/task resume')
    await until(async () => (await supervisor().state(session)).current?.nodeRuns?.n0?.status === 'passed', 'node n0')
    await idle()
    const before = mock.requests.filter(isMain)
    await host.restart()
    const again = await host.ctx.sessions.get(session.id)
    await host.ctx.commands.input(again, '/task resume')
    await until(async () => mock.requests.filter(isMain).length > before.length && mock.requests.filter(isMain)[before.length].endedAt !== undefined, 'the first step after the restart')
    const [last, first] = [before.at(-1)!, mock.requests.filter(isMain)[before.length]]
    const [a, b] = [serialized(last), serialized(first)]
    let same = 0
    while (same < Math.min(a.length, b.length) && a.charCodeAt(same) === b.charCodeAt(same)) same++
    const usage = (await again.read({ from: 0, limit: 100_000 })).filter((e: any) => e.type === 'model/usage').at(-1)?.data
    console.log(`restart: a 3-node task, the host restarted once node n0 passed, then /task resume (${before.length} main requests before)`)
    console.log(`  first main request after the restart: byte prefix shared with the last one before ${pct(same / b.length)} (${same} of ${b.length} characters; all of the last one's ${a.length - 2} but its closing brackets: ${same >= a.length - 2 ? 'yes' : 'no'})`)
    console.log(`  prompt tokens the endpoint's prefix cache served for it: ${usage?.cachedTokens ?? 0} of ${usage?.promptTokens ?? '?'} (mock count)`)
    goals.check('restart: first step\'s prefix reuse', same / b.length >= 0.9, `${pct(same / b.length)}, goal >= 90 %`)
  } finally {
    await host.dispose()
    await mock.close()
    await removeTree(cwd)
  }
}

{
  const runs = Number(process.env.MODEL_BENCH_SHORT_RUNS ?? 3)
  const shares: number[] = []
  for (let run = 0; run < runs; run++) {
    const mock = await OpenAIMock.start()
    mock.context = { tokens: 32768, dialect: 'vllm', discoverable: true, model: 'qwen2.5-coder' }
    mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['a is written'], nodes: [{ id: 'a', title: 'write a' }] } })
    const cwd = await tempWorkspace()
    const host = await hostOn(mock, true)
    try {
        const supervisor = (host.ctx as any).supervisor
      const { session } = await supervisor.startSession({ cwd, model: 'openai' })
      await host.ctx.commands.input(session, '/task new write a')
      await until(async () => (await supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan')
      await host.ctx.commands.input(session, '/task approve')
      await until(async () => ['complete', 'paused'].includes((await supervisor.state(session)).current?.phase), 'the task to end')
      const main = mock.requests.filter(isMain).map(serialized)
      for (let i = 1; i < main.length; i++) {
        const [a, b] = [main[i - 1], main[i]]
        let same = 0
        while (same < Math.min(a.length, b.length) && a.charCodeAt(same) === b.charCodeAt(same)) same++
        shares.push(same / b.length)
      }
    } finally {
      await host.dispose()
      await mock.close()
      await removeTree(cwd)
    }
  }
  const sorted = [...shares].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]
  console.log(`short task: a one-node task, ${runs} runs, ${shares.length} main steps after the first`)
  console.log(`  byte prefix shared with the previous main request: median ${pct(median)}, min ${pct(sorted[0])}, max ${pct(sorted.at(-1)!)}`)
  goals.check('short task: prefix reuse, median', median >= 0.9, `${pct(median)}, goal >= 90 %`)
}

goals.report()

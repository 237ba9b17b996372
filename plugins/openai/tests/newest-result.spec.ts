import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { TestHost, mockText, mockTools, taskPlayer, taskStateOf } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, runTurn, until } from './helpers'
import { bootRoute, history, ofType, useRig } from './loopback'

/** A Chinese text of `chars` characters (≈ one token each), lines numbered so that a cut shows where it is. */
export function chineseFile(chars: number) {
  const line = (i: number) => `第${i}行：调度器在审查通过之前让节点等待，然后按照依赖关系选择下一个就绪的节点。\n`
  let text = ''
  for (let i = 0; text.length < chars; i++) text += line(i)
  return text.slice(0, chars)
}

const isMain = (request: { body: any }) => String(request.body.messages?.[0]?.content ?? '').includes('You are the main agent')

describe('plugin-openai: the newest tool call and its result are always in the request', function () {
  this.timeout(60_000)
  const rig = useRig()

  /** The host on the rig's mock (route `openai`, once it is up); returns its supervisor. */
  async function bootOnMock() {
    rig.host = await TestHost.boot({
      plugins: [
        [SupervisorPlugin, { defaultModel: 'openai', reviewerModel: 'openai', automaticContinuation: true }],
        [OpenAIPlugin, { routes: [{ route: 'mock', baseURL: rig.mock.baseURL, apiKey: KEY, model: 'qwen2.5-coder', maxRetries: 0 }] }],
      ],
      waitFor: ['supervisor'],
    })
    await until(() => rig.host.ctx.models.routes().includes('openai'))
    return (rig.host.ctx as any).supervisor
  }

  it('a file larger than the window, read once: its result is cut to what fits, older entries dropped, and the node reports', async () => {
    // The case: a 6,018-character Chinese file on a vLLM server whose context is 4,653 tokens.
    await writeFile(join(rig.cwd, 'big.md'), chineseFile(6018))
    rig.mock.context = { tokens: 4653, dialect: 'vllm', discoverable: true, model: 'qwen2.5-coder' }
    rig.mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['a is written'], nodes: [{ id: 'a', title: 'write a' }] }, read: 'big.md' })
    const supervisor = await bootOnMock()
    const { session } = await supervisor.startSession({ cwd: rig.cwd, model: 'openai' })
    await rig.host.ctx.commands.input(session, '/task new write a after reading big.md')
    await until(async () => (await supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan', 30_000)
    await rig.host.ctx.commands.input(session, '/task approve')
    await until(async () => ['complete', 'paused'].includes((await supervisor.state(session)).current?.phase), 'the task to end', 50_000)
    const task = (await supervisor.state(session)).current
    const events = await session.read({ from: 0, limit: 10_000 })
    const calls = ofType(events, 'tool/call').map((e) => e.data.name)
    // Read once, then written and reported: no loop.
    expect(calls.filter((name) => name === 'read')).to.have.length(1)
    expect(calls).to.include('task_report_stage')
    expect(task.phase).to.equal('complete')
    // Nothing refused by the server.
    expect(rig.mock.requests.filter((r) => (r.promptTokens ?? 0) > 4653)).to.have.length(0)
    // The request after the read held its result, cut, with a marker that says how to read the rest.
    const main = rig.mock.requests.filter(isMain)
    const readResult = (r: { body: any }) => r.body.messages.find((m: any) => m.role === 'tool' && String(m.content).includes('第0行'))
    const afterRead = main.find(readResult)
    expect(afterRead, 'a request showing the read').to.not.equal(undefined)
    const shown = String(readResult(afterRead!).content)
    const left = Number(/…\[cut: (\d+) more characters not shown/.exec(shown)?.[1])
    expect(shown).to.match(/`read` with `offset` \d+/).and.match(/`grep`/)
    // The count is of the file's characters: what is shown of the content plus what was left out is the file.
    const content = (JSON.parse(`"${/"content":"((?:[^"\\]|\\.)*)/.exec(shown)![1]}"`) as string).split('\n…[cut:')[0]
    expect(content.length + left).to.equal(6018)
    expect(shown).to.include(`\`offset\` ${content.length} `)
    // Main requests until the stage report: the 132 (a loop a progress review stopped) down to a few.
    const report = main.findIndex((r) => JSON.stringify(r.body.messages).includes('task_report_stage'))
    expect(report + 1).to.be.within(1, 8)
  })

  it('a model that reads the same file again and again is answered TOOL_REPEATED, then its task pauses (loop) within a few steps', async () => {
    await writeFile(join(rig.cwd, 'big.md'), chineseFile(6018))
    rig.mock.context = { tokens: 4653, dialect: 'vllm', discoverable: true, model: 'qwen2.5-coder' }
    const player = taskPlayer({ plan: { acceptanceCriteria: ['a is written'], nodes: [{ id: 'a', title: 'write a' }] } })
    // Plans like the player, then, once a node runs, reads big.md forever (what never seeing the result did).
    rig.mock.fallback = (request) => {
      const state = taskStateOf(request.body.messages) as any
      return isMain(request) && state?.nodes?.some((n: any) => n.status === 'running') ? mockTools(['read', { path: 'big.md' }]) : player(request)
    }
    const supervisor = await bootOnMock()
    const { session, agent } = await supervisor.startSession({ cwd: rig.cwd, model: 'openai' })
    await rig.host.ctx.commands.input(session, '/task new write a after reading big.md')
    await until(async () => (await supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan', 30_000)
    await rig.host.ctx.commands.input(session, '/task approve')
    await until(async () => (await supervisor.state(session)).current?.phase === 'paused', 'the pause', 30_000)
    await agent.whenIdle()
    const task = (await supervisor.state(session)).current
    expect(task.pauseReason).to.equal('loop')
    const events = await session.read({ from: 0, limit: 10_000 })
    const reads = events.filter((e: any) => e.type === 'tool/result' && e.data.name === 'read').map((e: any) => e.data.error?.code ?? 'ok')
    expect(reads).to.deep.equal(['ok', 'ok', 'ok', 'TOOL_REPEATED', 'TOOL_REPEATED'])
    // The model saw the first answer: it is in the request after it.
    const main = rig.mock.requests.filter(isMain)
    expect(main.some((r) => JSON.stringify(r.body.messages).includes('TOOL_REPEATED'))).to.equal(true)
    expect(rig.mock.requests.filter((r) => (r.promptTokens ?? 0) > 4653)).to.have.length(0)
  })

  it('ends the step MODEL_CONTEXT_EXCEEDED, sending nothing, only when even the newest results cut short cannot fit', async () => {
    await writeFile(join(rig.cwd, 'big.md'), chineseFile(6018))
    rig.host = await bootRoute(rig.mock, { contextTokens: 3000 })
    const agent = await rig.agent()
    // One step asks for 40 reads at once: 40 results of at least 200 characters each cannot fit 3,000 tokens.
    rig.mock.script(mockTools(...Array.from({ length: 40 }, (_, i): [string, Record<string, unknown>] => ['read', { path: 'big.md', offset: i }])))
    const { summary } = await runTurn(rig.host, agent, 'read it all')
    expect(summary.error?.code).to.equal('MODEL_CONTEXT_EXCEEDED')
    expect(summary.error?.message).to.match(/newest tool call with its result/).and.match(/holds \d+/)
    expect(rig.mock.requests).to.have.length(1)
    // One read at once fits, cut.
    await history(agent, 0)
    rig.mock.script(mockTools(['read', { path: 'big.md' }]), mockText('read it'))
    const again = await runTurn(rig.host, agent, 'read it once')
    expect(again.summary.error).to.equal(undefined)
    expect(JSON.stringify(rig.mock.requests.at(-1)!.body.messages)).to.include('第0行').and.include('more characters not shown')
  })
})

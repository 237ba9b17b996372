import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { mockText, TestHost, taskPlayer, type MockRequest } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, until } from './helpers'
import { useRig } from './loopback'

const isMain = (request: MockRequest) => String(request.body.messages?.[0]?.content ?? '').includes('You are the main agent')

/** How much of `before`'s messages (serialized) `after`'s start with, as a share of `before`. */
function kept(before: MockRequest, after: MockRequest) {
  const [a, b] = [JSON.stringify(before.body.messages), JSON.stringify(after.body.messages)]
  let same = 0
  while (same < a.length && a.charCodeAt(same) === b.charCodeAt(same)) same++
  // The closing bracket of `before` is where `after` goes on.
  return (same + 1) / a.length
}

describe('plugin-openai: the window after a host restart', function () {
  this.timeout(60_000)
  const rig = useRig()

  async function boot(context: Record<string, unknown>) {
    rig.host = await TestHost.boot({
      plugins: [
        [SupervisorPlugin, { defaultModel: 'openai', reviewerModel: 'openai', automaticContinuation: true }],
        [OpenAIPlugin, { routes: [{ route: 'mock', baseURL: rig.mock.baseURL, apiKey: KEY, model: 'qwen2.5-coder', maxRetries: 0 }], context }],
      ],
      waitFor: ['supervisor'],
    })
    await until(() => rig.host.ctx.models.routes().includes('openai'))
  }

  /** A supervised one-node task to completion, a restart, then one message: the requests before and after. */
  async function restartAfterTask(context: Record<string, unknown>, read?: string) {
    rig.mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['a is written'], nodes: [{ id: 'a', title: 'write a' }] }, ...(read ? { read } : {}) })
    await boot(context)
    const supervisor = () => (rig.host.ctx as any).supervisor
    const { session } = await supervisor().startSession({ cwd: rig.cwd, model: 'openai' })
    await rig.host.ctx.commands.input(session, '/task new write a')
    await until(async () => (await supervisor().state(session)).current?.phase === 'awaiting-approval', 'the plan', 30_000)
    await rig.host.ctx.commands.input(session, '/task approve')
    await until(async () => (await supervisor().state(session)).current?.phase === 'complete', 'completion', 30_000)
    await until(() => rig.host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued), 'idle')
    const before = rig.mock.requests.filter(isMain).at(-1)!
    await rig.host.restart()
    const again = await rig.host.ctx.sessions.get(session.id)
    const agent = await rig.host.ctx.agents.resume(again.id)
    rig.mock.script(mockText('It is done.'))
    agent.followup('is it done?')
    await new Promise((resolve) => setTimeout(resolve, 0))
    await agent.whenIdle()
    const after = rig.mock.requests.filter(isMain).at(-1)!
    expect(after).to.not.equal(before)
    return { before, after }
  }

  it('the first step after a restart sends the previous request unchanged, then what is new (task-state notes in place)', async () => {
    const { before, after } = await restartAfterTask({ contextTokens: 24000 })
    // Several state notes were shown during the task, each where it was shown.
    const notes = (request: MockRequest) => request.body.messages.filter((m: any) => String(m.content).startsWith('[host: task state')).length
    expect(notes(before)).to.be.greaterThan(1)
    expect(after.body.messages.slice(0, before.body.messages.length)).to.deep.equal(before.body.messages)
    expect(kept(before, after)).to.equal(1)
  })

  it('also when the window had dropped entries before the restart: the start is read back, not laid out afresh', async () => {
    // A window small enough that the task's file read makes it drop (the start moves during the task).
    await writeFile(join(rig.cwd, 'notes.md'), Array.from({ length: 150 }, (_, i) => `- note ${i}: the scheduler keeps node ${i % 9} waiting.`).join('\n'))
    const { before, after } = await restartAfterTask({ contextTokens: 3600, toolResultChars: 3000 }, 'notes.md')
    const start = (request: MockRequest) => /entries before seq (\d+) are not shown/.exec(JSON.stringify(request.body.messages))?.[1]
    expect(start(before), 'the window dropped before the restart').to.not.equal(undefined)
    expect(start(after)).to.equal(start(before))
    expect(after.body.messages.slice(0, before.body.messages.length)).to.deep.equal(before.body.messages)
  })
})

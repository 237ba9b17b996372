import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { MockReply, MockRequest, OpenAIMock } from '@taskward/testkit'
import { useDsh, type DshWeb } from './dsh-host'
import { execute, replyJson, waitFor } from './dsh-api'
import { contentOf, currentTurn, dshTaskPlayer } from './dsh-player'

const ONE_NODE_PLAN = { acceptanceCriteria: ['a.txt is written'], nodes: [{ id: 'a', title: 'write a' }] }

/*
 * Issue 29 inside the real DSH host: a main agent that reads the same file again and again is answered
 * TOOL_REPEATED after three identical calls with identical results, and the task pauses (`loop`) at the
 * next one — counted as on our host (DSH's own repeat reminders do not reset the count).
 */
describe('repeated tool calls inside the real DSH host', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let web: DshWeb
  let workspace: string

  useDsh({
    player: dshTaskPlayer({ plan: ONE_NODE_PLAN as any }),
    workspace: 'repeats',
    prepare: async (dir) => { await writeFile(join(dir, 'notes.md'), 'the same notes\n') },
  }, (dsh) => ({ model, web, workspace } = dsh))

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && web) console.log(web.output.slice(-4000))
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))

  it('answers TOOL_REPEATED, then pauses the task (loop)', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt after reading notes.md')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 120_000)
    // From now on the main agent only reads notes.md, whatever it is told.
    const player = model.fallback as (request: MockRequest) => MockReply
    model.fallback = (request) => {
      const { input } = currentTurn(request.body.messages ?? [])
      if (input.startsWith('You review a ')) return player(request)
      return { toolCalls: [{ name: 'read', args: { file_path: join(workspace, 'notes.md') } }] }
    }
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'paused', 'the loop pause', 240_000)
    const task = (await status(sessionId)).task
    expect(task.pauseReason).to.equal('loop')
    const results = model.requests.flatMap((r) => (r.body.messages ?? []) as any[]).filter((m) => m.role === 'tool').map(contentOf)
    expect(results.some((text) => text.includes('TOOL_REPEATED')), 'the agent was told').to.equal(true)
    // Stopped in a few steps, not a hundred.
    const reads = new Set(model.requests.flatMap((r) => (r.body.messages ?? []) as any[])
      .flatMap((m) => m.tool_calls ?? []).filter((c: any) => c.function?.name === 'read').map((c: any) => c.id))
    expect(reads.size).to.be.at.most(8)
  })
})

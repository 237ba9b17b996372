import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { MockReply, MockRequest, OpenAIMock } from '@taskward/testkit'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { execute, replyJson, waitFor } from './dsh-api'
import { contentOf, currentTurn, dshTaskPlayer } from './dsh-player'

/*
 * DSH's own sub-agents against admission: a background child the main agent spawned while its task
 * was running is a second session in the same workspace. After the task completes, a turn of that
 * child (here the user's prompt to it through DSH's `subagent.prompt`) is held to the main session's
 * admission, as a consultation is on our host: DSH's `write` is refused before it runs.
 */
describe('DSH sub-agents of a supervised session', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string
  /** The tool results the child saw in its write turn. */
  const childResults: string[] = []

  const player = dshTaskPlayer()
  const fallback = (request: MockRequest): MockReply => {
    const messages: any[] = request.body.messages ?? []
    const { input, turn } = currentTurn(messages)
    const calls = turn.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []).map((c: any) => c.function.name)
    const results = turn.filter((m) => m.role === 'tool').map(contentOf)
    if (input.includes('Spawn a helper.')) {
      return calls.includes('subagent') ? { text: 'Spawned.' } : { toolCalls: [{ name: 'subagent', args: { description: 'a helper', prompt: 'HELPER-HELLO' } }] }
    }
    if (input.includes('HELPER-HELLO')) return { text: 'Ready.' }
    if (input.includes('HELPER-WRITE')) {
      if (!calls.includes('write')) return { toolCalls: [{ name: 'write', args: { file_path: join(workspace, 'helper.txt'), content: 'written by a sub-agent\n' } }] }
      childResults.push(...results)
      return { text: 'Finished.' }
    }
    return player(request)
  }
  // A task completes only after a passing check (recovery: no checks is MISSING, never a pass).
  useDsh({ player: fallback, workspace: 'subagent', config: PASSING_RECOVERY }, (dsh) => ({ model, home, web, workspace } = dsh))

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))

  it('refuses a background child\'s write after the main task completed (REPAIR_CONFIRMATION_REQUIRED)', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'Spawn a helper.' }] })
    let child: string | undefined
    await waitFor(async () => {
      const { entries } = await web.api('subagent.list', { parentSessionId: sessionId })
      child = entries.find((e: any) => e.kind === 'child' && e.mode === 'continuable' && e.activity === 'inactive')?.id
      return !!child
    }, 'the background child to settle', 60_000)

    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)

    await web.api('subagent.prompt', { parentSessionId: sessionId, childSessionId: child, mode: 'continuable', content: [{ type: 'text', text: 'HELPER-WRITE' }] })
    await waitFor(() => childResults.length > 0, 'the child\'s write to be answered', 60_000)
    expect(childResults.join('\n')).to.match(/REPAIR_CONFIRMATION_REQUIRED/)
    expect(existsSync(join(workspace, 'helper.txt')), 'nothing written').to.equal(false)
    expect((await status(sessionId)).task).to.include({ phase: 'complete' })
  })

  it('refuses the write of a background child a consultation spawned (its DSH parent: the consultation) after the main task completed', async () => {
    childResults.length = 0
    const cwd = join(workspace, 'consulted')
    await mkdir(cwd, { recursive: true })
    const { sessionId } = await web.api('session.create', { cwd })
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    const consultation = replyJson(await execute(web, sessionId, '/task consult')).sessionId as string
    await web.api('session.prompt', { sessionId: consultation, mode: 'queue', content: [{ type: 'text', text: 'Spawn a helper.' }] })
    let child: string | undefined
    await waitFor(async () => {
      const { entries } = await web.api('subagent.list', { parentSessionId: consultation })
      child = entries.find((e: any) => e.kind === 'child' && e.mode === 'continuable' && e.activity === 'inactive')?.id
      return !!child
    }, 'the consultation\'s background child to settle', 60_000)

    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)

    await web.api('subagent.prompt', { parentSessionId: consultation, childSessionId: child, mode: 'continuable', content: [{ type: 'text', text: 'HELPER-WRITE' }] })
    await waitFor(() => childResults.length > 0, 'the child\'s write to be answered', 60_000)
    expect(childResults.join('\n')).to.match(/REPAIR_CONFIRMATION_REQUIRED/)
    expect(existsSync(join(workspace, 'helper.txt')), 'nothing written').to.equal(false)
    expect((await status(sessionId)).task).to.include({ phase: 'complete' })
  })
})

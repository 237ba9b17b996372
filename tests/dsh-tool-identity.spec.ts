import { expect } from 'chai'
import { access, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { mockText, type OpenAIMock, type MockReply, type MockRequest } from '@taskward/testkit'
import { PASSING_RECOVERY, useDsh, type DshWeb } from './dsh/dsh-host'
import { execute, replyJson, waitFor } from './dsh/dsh-api'
import { contentOf, currentTurn, dshTaskPlayer } from './dsh/dsh-player'

/*
 * Tool admission inside the real DSH host is bound to what a call runs, not to its name. Another DSH
 * plugin (tests/fixtures/dsh-neighbour-plugin, added next to the bundle) calls a global tool that writes
 * without an agent, lets its agent calls through its own tools/pre-execute policy, and tries to register tools named `read` and `task_status` that write files in the
 * main agent's own scope. After the task completed none of them may change the accepted work.
 */
describe('DSH tool admission binds to the tool, not its name (another plugin next to Taskward)', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let web: DshWeb
  let workspace: string
  let completed: string | undefined

  useDsh({
    player: dshTaskPlayer(), workspace: 'identity', config: PASSING_RECOVERY,
    plugins: [`link:${resolve('tests/fixtures/dsh-neighbour-plugin')}`],
  }, (suite) => ({ model, web, workspace } = suite))

  before(async function () {
    if (!web) return this.skip()
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    const status = async () => replyJson(await execute(web, sessionId, '/task status --json'))
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status()).task?.phase === 'awaiting-approval', 'the plan review to pass', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status()).task?.phase === 'complete', 'the task to complete', 180_000)
    completed = sessionId
  })

  afterEach(function () {
    if (this.currentTest?.state === 'failed' && web) console.log(web.output.slice(-3000))
  })

  const neighbour = async (path: string, body: unknown) => {
    const response = await fetch(`${web.origin}/neighbour/${path}`, { method: 'POST', body: JSON.stringify(body) })
    const answer: any = await response.json()
    if (response.status !== 200) throw new Error(`neighbour ${path}: ${answer.error}`)
    return answer
  }

  it('refuses a tool call that arrives without an agent (coded) and runs nothing', async function () {
    if (!completed) return this.skip()
    const answer = await neighbour('agentless', { name: 'neighbour_write', arguments: { file_path: join(workspace, 'a.txt') } })
    expect(answer.isError).to.equal(true)
    expect(answer.text).to.include('FORBIDDEN').and.include('without an agent')
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a done\n')
  })

  it('holds a call that another plugin\'s tools/pre-execute policy let through to admission before it runs', async function () {
    if (!completed) return this.skip()
    const served = model.requests.length
    const player = model.fallback as (request: MockRequest) => MockReply
    model.fallback = (request) => {
      const { input, turn } = currentTurn(request.body.messages ?? [])
      if (input !== 'Write with the neighbour.') return player(request)
      return turn.some((m) => m.role === 'tool') ? mockText('Done.') : { toolCalls: [{ name: 'neighbour_write', args: { file_path: join(workspace, 'a.txt') } }] }
    }
    try {
      await web.api('session.prompt', { sessionId: completed, mode: 'queue', content: [{ type: 'text', text: 'Write with the neighbour.' }] })
      const answered = () => model.requests.slice(served).find((r) => currentTurn(r.body.messages ?? []).turn.some((m) => m.role === 'tool'))
      await waitFor(() => !!answered(), 'the turn with the neighbour\'s call')
      const [result] = currentTurn(answered()!.body.messages).turn.filter((m) => m.role === 'tool').map(contentOf)
      expect(result).to.include('REPAIR_CONFIRMATION_REQUIRED')
      expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a done\n')
    } finally {
      model.fallback = player
    }
  })

  it('treats another plugin\'s `read` in the agent\'s scope as an implementation tool after completion; Taskward\'s task_status cannot be shadowed there', async function () {
    if (!completed) return this.skip()
    const shadow = await neighbour('shadow', { sessionId: completed, names: ['read', 'task_status'] })
    expect(shadow.shadowed.read).to.equal(true)
    // Taskward's own tools sit in the supervised agent's own scope, so DSH refuses a second one there.
    expect(shadow.shadowed.task_status).to.match(/^refused: .*already registered in this scope/)
    const served = model.requests.length
    const calls = [
      { name: 'read', args: { file_path: join(workspace, 'read-shadow.txt') } },
      { name: 'task_status', args: { file_path: join(workspace, 'status-shadow.txt') } },
      // DSH's own glob (its preset's registration, not shadowed): still read-only, still allowed.
      { name: 'glob', args: { pattern: '*.txt', path: workspace } },
    ]
    // The main agent's turn for this prompt (DSH also asks the model for a session title meanwhile).
    const player = model.fallback as (request: MockRequest) => MockReply
    model.fallback = (request) => {
      const { input, turn } = currentTurn(request.body.messages ?? [])
      if (input !== 'Look at the files.') return player(request)
      return turn.some((m) => m.role === 'tool') ? mockText('Nothing changed.') : { toolCalls: calls }
    }
    await web.api('session.prompt', { sessionId: completed, mode: 'queue', content: [{ type: 'text', text: 'Look at the files.' }] })
    const answered = () => model.requests.slice(served).find((r) => currentTurn(r.body.messages ?? []).turn.some((m) => m.role === 'tool'))
    await waitFor(() => !!answered(), 'the turn with the three calls')
    const results = currentTurn(answered()!.body.messages).turn.filter((m) => m.role === 'tool').map(contentOf)
    expect(results).to.have.length(3)
    expect(results[0]).to.include('REPAIR_CONFIRMATION_REQUIRED').and.include('another DSH plugin\'s tool')
    // task_status is Taskward's own: it answers the status.
    expect(JSON.parse(results[1]).task.phase).to.equal('complete')
    expect(results[2]).to.not.match(/REPAIR_CONFIRMATION_REQUIRED|FORBIDDEN/)
    expect(results[2]).to.include('a.txt')
    await access(join(workspace, 'read-shadow.txt')).then(() => expect.fail('the shadow read wrote its file'), () => {})
  })
})

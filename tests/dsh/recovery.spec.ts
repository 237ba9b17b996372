import { expect } from 'chai'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { mockText, type MockReply, type MockRequest, type OpenAIMock } from '@taskward/testkit'
import { useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, execute, replyJson, waitFor } from './dsh-api'
import { contentOf, currentTurn, dshTaskPlayer } from './dsh-player'

/*
 * The recovery controller inside the real DSH host: a check configured in the bundle row's config runs
 * in bubblewrap against the session's directory after a stage report and at completion; the task cannot complete while it fails
 * and completes once it passes (and the reviewer passes).
 */
const ANSWER_CHECK = {
  id: 'answer',
  argv: ['sh', '-c', 'test "$(cat answer.txt)" = "$(cat expected.txt)" || { echo "wrong answer: $(cat answer.txt)"; exit 1; }'],
  timeoutMs: 20_000,
  // What verifies the agent's work: it may read it (DSH's own read is read-only), never write it.
  pin: ['expected.txt'],
}
const ONE_NODE_PLAN = { acceptanceCriteria: ['a.txt is written and the answer is right'], nodes: [{ id: 'a', title: 'write a' }] }

describe('recovery checks inside the real DSH host', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string

  useDsh({
    player: dshTaskPlayer({ plan: ONE_NODE_PLAN as any }),
    workspace: 'recovery',
    prepare: async (dir) => { await writeFile(join(dir, 'answer.txt'), 'alpha'); await writeFile(join(dir, 'expected.txt'), 'right') },
    config: { recovery: { checks: [ANSWER_CHECK], sandbox: 'bwrap' } },
  }, (dsh) => ({ model, home, web, workspace } = dsh))

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && web) console.log(web.output.slice(-4000))
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))
  const records = async (sessionId: string, kind: string) => carriedEvents(sessionId, await web.api('session.history', { sessionId }))
    .filter((e) => e.type === 'extension/record' && (e.data as any)?.namespace === 'dsh-task-supervisor-recovery' && (e.data as any)?.kind === kind)
    .map((e) => (e.data as any).payload)

  it('refuses completion while the check fails (run in bwrap on the session directory) and completes once it passes', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt and get the answer right')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review to pass', 60_000)
    await execute(web, sessionId, '/task approve')
    // The agent writes a.txt, reports the stage, requests completion: refused, the answer is wrong.
    await waitFor(async () => (await records(sessionId, 'decision')).some((d) => d.verdict === 'FAIL'), 'a failing decision', 120_000)
    const refusal = () => model.requests.flatMap((r) => (r.body.messages ?? []) as any[]).filter((m) => m.role === 'tool').map(contentOf)
      .find((text) => text.includes('VERDICT_NEGATIVE'))
    await waitFor(() => !!refusal(), 'the agent to read the refusal', 30_000)
    expect(refusal(), 'the agent was told why').to.match(/answer/)
    expect((await status(sessionId)).task?.phase).to.equal('active')
    // The stage report was verified too, as on our host (recovery reads the report's result).
    const progress = (await records(sessionId, 'attempt')).filter((a) => a.agentClaim === 'progress')
    expect(progress, 'a progress attempt for the stage report').to.have.length.at.least(1)
    expect(progress[0].checks[0]).to.include({ checkId: 'answer', verdict: 'FAIL' })
    const failed = (await records(sessionId, 'attempt')).filter((a) => a.agentClaim === 'done')
    expect(failed).to.have.length.at.least(1)
    expect(failed[0]).to.include({ sandbox: 'bwrap' })
    expect(failed[0].checks[0]).to.include({ checkId: 'answer', verdict: 'FAIL', exitCode: 1 })
    // It read the session's directory.
    expect(failed[0].checks[0].outputExcerpt).to.match(/wrong answer: alpha/)
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a done\n')

    // The agent reads the pinned expectation with DSH's own read (allowed: a read is not a write), then
    // tries to write it with DSH's write and an absolute path, as DSH's tools take them: CHECK_PINNED.
    const player = model.fallback as (request: MockRequest) => MockReply
    let results: string[] | undefined
    model.fallback = (request) => {
      const { input, turn } = currentTurn(request.body.messages ?? [])
      if (input !== 'Check the expected answer.') return player(request)
      const tools = turn.filter((m) => m.role === 'tool').map(contentOf)
      if (tools.length === 0) return { toolCalls: [{ name: 'read', args: { file_path: join(workspace, 'expected.txt') } }] }
      if (tools.length === 1) return { toolCalls: [{ name: 'write', args: { file_path: join(workspace, 'expected.txt'), content: 'alpha' } }] }
      results = tools
      return mockText('Checked.')
    }
    try {
      await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'Check the expected answer.' }] })
      await waitFor(() => !!results, 'the read and the write', 60_000)
      const [read, write] = results!
      expect(read).to.not.include('CHECK_PINNED')
      expect(read).to.include('right')
      expect(write).to.include('CHECK_PINNED')
      expect(await readFile(join(workspace, 'expected.txt'), 'utf8')).to.equal('right')
    } finally {
      model.fallback = player
    }

    // The answer fixed in the session's directory: the next request completes (after the reviewer's pass).
    await writeFile(join(workspace, 'answer.txt'), 'right')
    await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'The answer is fixed now; request completion again.' }] })
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'the task to complete', 120_000)
    const decisions = await records(sessionId, 'decision')
    expect(decisions.at(-1)).to.include({ action: 'COMPLETE', verdict: 'PASS' })
    expect(await records(sessionId, 'receipt')).to.have.length(1)
  })
})

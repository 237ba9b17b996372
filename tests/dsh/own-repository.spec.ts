import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { OpenAIMock } from '@taskward/testkit'
import { useDsh, type DshWeb } from './dsh-host'
import { carriedEvents, execute, replyJson, taskward, waitFor } from './dsh-api'
import { dshTaskPlayer } from './dsh-player'

const run = promisify(execFile)
const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url))
const ONE_NODE_PLAN = { acceptanceCriteria: ['a.txt is written and the repository still type-checks'], nodes: [{ id: 'a', title: 'write a' }] }
// The repository's own TypeScript, from its node_modules (mounted read-only into the check's sandbox).
const TYPECHECK = { id: 'typecheck', argv: ['node_modules/.bin/tsc', '-p', 'packages/protocol', '--noEmit'], timeoutMs: 240_000 }

/*
 * Issue 27 inside the real DSH host with the bundle: the session works on a clone of this repository
 * after `npm ci` (23,000 entries and 45 links in node_modules). The stage report and the completion are
 * verified by the repository's own tsc in bubblewrap, the task completes, a repair proposal's stamp
 * shows the workspace and its dependencies apart, and the click reopens the task.
 */
describe('Taskward inside the real DSH host supervises a task on its own repository', function () {
  this.timeout(900_000)
  const token = randomBytes(32).toString('base64url')
  let model: OpenAIMock
  let web: DshWeb
  let workspace: string

  useDsh({
    player: dshTaskPlayer({ plan: ONE_NODE_PLAN as any }),
    workspace: 'own-repository',
    prepare: async (dir) => {
      await run('git', ['clone', '--quiet', '--no-hardlinks', REPOSITORY, dir])
      await run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, maxBuffer: 64 * 1024 * 1024 })
    },
    config: { operatorToken: token, recovery: { checks: [TYPECHECK], sandbox: 'bwrap' } },
  }, (dsh) => ({ model, web, workspace } = dsh))

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && web) console.log(web.output.slice(-4000))
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))
  const repair = (sessionId: string, body: unknown) => taskward(web, `/api/sessions/${sessionId}/repair`, { body, token })

  it('verifies with the repository\'s own tsc, completes, shows the dependencies apart in the repair stamp and reopens on the click', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt in the repository')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 120_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 600_000)

    const attempts = carriedEvents(sessionId, await web.api('session.history', { sessionId }))
      .filter((e) => e.type === 'extension/record' && (e.data as any)?.namespace === 'dsh-task-supervisor-recovery' && (e.data as any)?.kind === 'attempt')
      .map((e) => (e.data as any).payload)
    expect(attempts.length, 'the stage report and the completion were verified').to.be.at.least(2)
    for (const attempt of attempts) {
      expect(attempt).to.include({ sandbox: 'bwrap' })
      expect(attempt.checks.map((check: any) => [check.checkId, check.verdict]), JSON.stringify(attempt.checks)).to.deep.equal([['typecheck', 'PASS']])
    }

    const completed = (await status(sessionId)).task
    const proposed = await repair(sessionId, { action: 'propose', taskId: completed.id, revision: completed.revision, reason: 'a.txt must say repaired', rootNodeIds: ['a'] })
    expect(proposed.status, JSON.stringify(proposed.body)).to.equal(200)
    const listed = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    const artifact = listed.body.proposals[0].proposal.artifact
    expect(artifact.links).to.be.greaterThan(10)
    expect(artifact.dependencies.files).to.be.greaterThan(10_000)

    const confirmed = await repair(sessionId, { action: 'confirm', proposalId: proposed.body.proposalId, taskId: completed.id, revision: completed.revision })
    expect(confirmed.status, JSON.stringify(confirmed.body)).to.equal(200)
    expect(confirmed.body.outcome).to.equal('reopened')
    expect(model.requests.length).to.be.greaterThan(0)
  })
})

import { execFile } from 'node:child_process'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { RECOVERY_NAMESPACE } from '@taskward/protocol'
import {
  allIdle, currentTask, driveToApproval, removeTree, reviewsSettled, runCommand, runTool, scriptReviewer, TestHost,
} from '@taskward/testkit'

const run = promisify(execFile)
const REPOSITORY = fileURLToPath(new URL('..', import.meta.url))
const EDITED = 'packages/protocol/src/workspace/limits.ts'

/*
 * Taskward on a real repository — this one: cloned, `npm ci` from the local cache (23,000 entries and
 * 45 links in node_modules), the host's data directory inside it as when `npm start` runs there. A
 * scripted agent edits one source file; the check type-checks a package with the repository's own
 * TypeScript (bubblewrap where installed: node_modules mounted read-only, not copied). The stage is
 * verified, the task completes, a repair proposal shows the impact, Confirm reopens it.
 */
describe('Taskward supervises a task on its own repository', function () {
  this.timeout(10 * 60_000)
  let base: string
  let cwd: string
  let host: TestHost
  let session: Session
  const savedData = process.env.TASKWARD_DATA

  before(async function () {
    base = await mkdtemp(join(tmpdir(), 'taskward-own-repo-'))
    cwd = join(base, 'taskward')
    await run('git', ['clone', '--quiet', '--no-hardlinks', REPOSITORY, cwd])
    // From the cache the suite's own install filled (.ci/run's npm ci); the network only for a miss.
    await run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd, maxBuffer: 64 * 1024 * 1024 })
    // The host runs inside the repository it works on, its data in the (gitignored) data/ there.
    process.env.TASKWARD_DATA = join(cwd, 'data')
    const { stdout } = await run('sh', ['-c', 'command -v bwrap || true'])
    if (!stdout.trim() && process.env.CI) throw new Error('bubblewrap (bwrap) must be installed in CI: .ci/run installs it')
    host = await TestHost.boot({
      dataDir: join(cwd, 'data'),
      plugins: [
        'workspace', 'admission',
        ['supervisor', { automaticContinuation: false }],
        'repair',
        ['recovery', { sandbox: stdout.trim() ? 'bwrap' : 'copy' }],
      ],
    })
    session = (await host.ctx.supervisor.startSession({ cwd })).session
  })

  after(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (savedData === undefined) delete process.env.TASKWARD_DATA
    else process.env.TASKWARD_DATA = savedData
    if (base) await removeTree(base)
  })

  it('verifies the stage, completes, shows the repair impact and reopens on Confirm', async () => {
    const stamp = await host.ctx.workspace.stamp(cwd)
    expect(stamp.links, 'node_modules/.bin links are stamped').to.be.greaterThan(10)
    expect(stamp.dependencies!.entries, 'node_modules is past the workspace limit of 10,000').to.be.greaterThan(10_000)

    await driveToApproval(host, session, { objective: 'document why the stamp limits have two sets' })
    await runCommand(host, session, `/task checks ${JSON.stringify([
      { id: 'typecheck', argv: ['node_modules/.bin/tsc', '-p', 'packages/protocol', '--noEmit'], timeoutMs: 240_000 },
    ])}`)

    // The agent (a scripted model) edits one source file and reports the stage.
    const source = await readFile(join(cwd, EDITED), 'utf8')
    const edited = source.replace('export const DEFAULT_MAX_ENTRIES', '// Checked by the own-repository test.\nexport const DEFAULT_MAX_ENTRIES')
    expect(edited).to.not.equal(source)
    host.scripted.script('main', [
      { toolCalls: [{ name: 'task_start_node', args: { nodeId: 'a' } }] },
      { toolCalls: [{ name: 'write', args: { path: EDITED, content: edited } }] },
      { toolCalls: [{ name: 'task_report_stage', args: { nodeId: 'a' } }] },
      { text: 'The stage is reported.' },
    ])
    scriptReviewer(host, 'pass')
    const agent = host.ctx.agents.get(session.id)!
    agent.followup('Do node a.', { origin: 'user' })
    await agent.whenIdle()
    await reviewsSettled(host, session)
    await host.ctx.recovery.settled()
    expect(await readFile(join(cwd, EDITED), 'utf8')).to.equal(edited)

    const attempts = []
    for await (const event of session.events()) {
      if ((event.data as any)?.namespace === RECOVERY_NAMESPACE && (event.data as any).kind === 'attempt') attempts.push(event)
    }
    expect(attempts.length, 'the stage report was verified').to.be.greaterThan(0)
    const stage = (attempts.at(-1)!.data as any).payload
    expect(stage.checks.map((check: any) => [check.checkId, check.verdict]), JSON.stringify(stage.checks)).to.deep.equal([['typecheck', 'PASS']])
    expect((await currentTask(host, session))!.nodeRuns.a.status).to.equal('passed')

    scriptReviewer(host, 'pass')
    await runTool(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    await host.ctx.recovery.settled()
    const done = (await currentTask(host, session))!
    expect(done.phase, JSON.stringify(done.completionReview)).to.equal('complete')

    // The user proposes a repair in the console; its impact shows the workspace and its dependencies apart.
    const post = async (body: unknown) => {
      const response = await host.http.post(`/api/sessions/${session.id}/repair`, body)
      return { status: response.status, body: await response.json() as any }
    }
    const proposed = await post({ action: 'propose', taskId: done.id, revision: done.revision, reason: 'The comment names the wrong test.', rootNodeIds: ['a'] })
    expect(proposed.status, JSON.stringify(proposed.body)).to.equal(200)
    const view = (await host.http.json(`/api/sessions/${session.id}/repairs`)).body as any
    const artifact = view.proposals[0].proposal.artifact
    expect(artifact.dependencies.files).to.be.greaterThan(10_000)
    expect(artifact.files - artifact.dependencies.files).to.be.within(100, 10_000)

    // The host kept writing its database inside the workspace meanwhile: Confirm is not ARTIFACT_CHANGED.
    await writeFile(join(cwd, 'data', 'unrelated-host-file'), 'the host writes here')
    const confirmed = await post({ action: 'confirm', proposalId: proposed.body.proposalId, taskId: done.id, revision: done.revision })
    expect(confirmed.status, JSON.stringify(confirmed.body)).to.equal(200)
    expect(confirmed.body).to.include({ outcome: 'reopened', acceptanceCycle: 2 })
    await allIdle(host, session)
    const reopened = (await currentTask(host, session))!
    expect(reopened).to.include({ id: done.id, phase: 'active', acceptanceCycle: 2 })
  })
})

/*
 * A whole supervised task with the OpenAI adapter in every role, against the loopback mock: plan →
 * /task approve → stages with their reviews → completion → a repair proposal → confirm → cycle 2 →
 * completion. Then the API key is searched for in every table row, the captured logs and the HTTP
 * answers: it must be nowhere.
 */
import { expect } from 'chai'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Logger } from 'cordis'
import type { Session } from '@taskward/host'
import { AdmissionService } from '@taskward/plugin-admission'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { RepairPlugin } from '@taskward/plugin-repair'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { WebConsole } from '@taskward/plugin-console'
import { OpenAIMock, TestHost, removeTree, taskPlayer, tempWorkspace } from '@taskward/testkit'

const KEY = 'sk-live-7f3a9c1e5b2d8f40-NEVER-STORE'

async function until(check: () => boolean | Promise<boolean>, what: string, timeout = 60_000) {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('a supervised task driven by the OpenAI adapter (loopback mock)', function () {
  this.timeout(240_000)
  let mock: OpenAIMock
  let host: TestHost
  let cwd: string
  const logs: string[] = []
  let target: Logger.Target

  before(async () => {
    // Capture every log line at every level while the host runs.
    target = { colors: 0, showTime: '', levels: { base: 3 } as any, print: (text: string) => logs.push(text) } as Logger.Target
    Logger.targets.push(target)
    mock = await OpenAIMock.start()
    mock.fallback = taskPlayer({ usage: { prompt_tokens: 50, completion_tokens: 5 } })
    host = await TestHost.boot({
      plugins: [
        [SupervisorPlugin, { reviewerModel: 'openai', automaticContinuation: true, progressReviewAfterTurns: 50 }],
        [WorkspacePlugin, {}], [AdmissionService, {}], [RepairPlugin, {}], [WebConsole, { demo: false }],
        [OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'mock-1', timeoutMs: 5000, maxRetries: 1 }] }],
      ],
      waitFor: ['supervisor', 'repair', 'workspace', 'webConsole'],
    })
    await until(() => host.ctx.models.routes().includes('openai'), 'the openai routes')
    cwd = await tempWorkspace({ 'README.md': '# greet\n' })
  })

  after(async () => {
    Logger.targets.splice(Logger.targets.indexOf(target), 1)
    await host?.dispose()
    await mock?.close()
    if (cwd) await removeTree(cwd)
  })

  const phase = async (session: Session) => (await host.ctx.supervisor.state(session)).current?.phase
  const idle = () => host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued)

  it('runs plan → approval → stages → completion → repair → cycle 2 → completion, with usage recorded and no key anywhere', async () => {
    const { session } = await host.ctx.supervisor.startSession({ cwd, model: 'openai' })
    const reply = await host.ctx.commands.input(session, '/task new write a and b')
    expect(reply?.error).to.equal(undefined)
    await until(async () => await phase(session) === 'awaiting-approval', 'the plan to pass review')
    const approved = await host.ctx.commands.input(session, '/task approve')
    expect(approved?.error, approved?.error?.message).to.equal(undefined)
    await until(async () => await phase(session) === 'complete', 'the task to complete').catch(async (error) => {
      for (const e of await session.read({ from: 0, limit: 1000 })) console.log(e.seq, e.type, JSON.stringify(e.data).slice(0, 300))
      for (const agent of host.ctx.agents.list()) {
        if (agent.session.role !== 'reviewer') continue
        for (const e of await agent.session.read({ from: 0, limit: 1000 })) console.log('R', e.seq, e.type, JSON.stringify(e.data).slice(0, 400))
      }
      throw error
    })
    expect(await readFile(join(cwd, 'a.txt'), 'utf8')).to.equal('a done (first pass, attempt 1)\n')
    expect(await readFile(join(cwd, 'b.txt'), 'utf8')).to.equal('b done (first pass, attempt 1)\n')

    // Every role went through the adapter: reviewers got the reviewer instructions.
    const reviewerRequests = mock.requests.filter((r) => r.body.messages[0].content.includes('You are a reviewer'))
    expect(reviewerRequests.length).to.be.at.least(4 * 2)
    const verdicts = reviewerRequests.filter((r) => r.reply && 'toolCalls' in r.reply && r.reply.toolCalls?.[0].name === 'review_verdict')
    expect(verdicts).to.have.length(4) // plan, a, b, completion

    // A repair: the user asks the main agent; the proposal is confirmed through the repair service.
    await until(idle, 'agents to go idle')
    const agent = host.ctx.agents.get(session.id)!
    agent.followup('a.txt looks wrong; please propose a repair of node a.')
    await until(async () => (await host.ctx.supervisor.status(session)).proposals.some((p) => p.status === 'pending'), 'a repair proposal')
    await until(idle, 'agents to go idle')
    const status = await host.ctx.supervisor.status(session)
    const proposal = status.proposals.find((p) => p.status === 'pending')!
    const outcome = await host.ctx.repair.confirm(session.id, { proposalId: proposal.id, taskId: proposal.taskId, revision: status.task!.revision })
    expect(outcome).to.include({ outcome: 'reopened', acceptanceCycle: 2 })
    await until(async () => await phase(session) === 'complete' && idle(), 'cycle 2 to complete')
    const task = (await host.ctx.supervisor.state(session)).current!
    expect(task.acceptanceCycle).to.equal(2)
    expect(await readFile(join(cwd, 'a.txt'), 'utf8')).to.match(/^a done \(repaired, attempt 2\)/)

    // Usage: one model/usage event per main-agent step, with the mock's numbers.
    const events = await session.read({ from: 0, limit: 100_000 })
    const usage = events.filter((e) => e.type === 'model/usage')
    expect(usage.length).to.be.greaterThan(8)
    expect(usage.every((e) => e.data.route === 'openai' && e.data.promptTokens === 50 && e.data.completionTokens === 5)).to.equal(true)

    // The key: in no table row, no log line, no HTTP answer.
    const http: string[] = []
    for (const path of ['/api/console/sessions', `/api/console/sessions/${session.id}/view`, `/api/sessions/${session.id}/repairs`]) {
      const response = await host.http.fetch(path)
      expect(response.status, path).to.equal(200)
      http.push(await response.text())
    }
    let rows = 0
    for (const name of Object.keys(host.ctx.database.tables)) {
      for (const row of await host.ctx.database.get(name as any, {})) {
        rows++
        expect(JSON.stringify(row), `a row of ${name}`).to.not.include(KEY)
      }
    }
    expect(rows).to.be.greaterThan(50)
    await host.stop()
    // And not in the bytes of the database files (freed pages and journals included).
    for (const file of await readdir(host.dataDir)) {
      const bytes = await readFile(join(host.dataDir, file)).catch(() => Buffer.alloc(0))
      expect(bytes.includes(Buffer.from(KEY)), file).to.equal(false)
    }
    expect(logs.length).to.be.greaterThan(0)
    for (const line of logs) expect(line).to.not.include(KEY)
    for (const body of http) expect(body).to.not.include(KEY)
    // The key was really used: the mock saw it in the Authorization header of every request.
    expect(mock.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).to.equal(true)
  })
})

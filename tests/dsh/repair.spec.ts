import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { OpenAIMock } from '@taskward/testkit'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, execute, reopenedStates, repairRecords, replyJson, taskward, waitFor } from './dsh-api'
import { dshTaskPlayer } from './dsh-player'

/*
 * M4 against the real DSH host: the repair flow of seed 000 through Taskward's own authenticated
 * route on DSH's web server — a proposal, the refused clicks (no token, foreign Origin, stale
 * revision, changed files), the confirmed click reopening the task, completion again, a second click
 * already applied — and proposals restored across a DSH restart.
 */
describe('repair after completion inside the real DSH host', function () {
  this.timeout(600_000)
  const token = randomBytes(32).toString('base64url')
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string
  let main: string | undefined

  useDsh({ player: dshTaskPlayer(), workspace: 'repair', config: { operatorToken: token, ...PASSING_RECOVERY } },
    (dsh) => ({ model, home, web, workspace } = dsh))

  // On failure: the tail of each main session's log without the /task polls, and the last model requests.
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !model || !web) return
    if (main) {
      const h = await web.api('session.history', { sessionId: main }).catch(() => undefined)
      for (const { event } of (h?.events ?? []).filter((e: any) => !e.event.type.startsWith('command/')).slice(-30)) {
        console.log('      log', event.seq, event.type, JSON.stringify(event.data).slice(0, 250))
      }
    }
    for (const r of model.requests.slice(-2)) {
      const ms: any[] = r.body.messages ?? []
      console.log('      model', ms.slice(-2).map((m) => `${m.role}: ${JSON.stringify(m.content ?? m.tool_calls).slice(0, 300)}`).join(' | '))
    }
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))
  const repair = (sessionId: string, body: unknown, options: { token?: string, origin?: string | null } = { token }) =>
    taskward(web, `/api/sessions/${sessionId}/repair`, { body, ...options })

  it('proposes, refuses bad clicks writing nothing, keeps the proposal across a restart, reopens on the click, completes again; a second click is already-applied', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    main = sessionId
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)
    const completed = (await status(sessionId)).task

    const proposed = await repair(sessionId, { action: 'propose', taskId: completed.id, revision: completed.revision, reason: 'a.txt says done but must say repaired', rootNodeIds: ['a'] })
    expect(proposed.status, JSON.stringify(proposed.body)).to.equal(200)
    const { proposalId } = proposed.body
    const listed = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(listed.body.proposals).to.have.length(1)
    expect(listed.body.proposals[0]).to.include({ status: 'pending' })
    expect(listed.body.proposals[0].proposal).to.include({ id: proposalId, source: 'user' })
    expect(listed.body.proposals[0].proposal.affectedNodeIds).to.deep.equal(['a', 'b'])

    const click = { action: 'confirm', proposalId, taskId: completed.id, revision: completed.revision }
    const noToken = await repair(sessionId, click, {})
    expect([noToken.status, noToken.body.code]).to.deep.equal([401, 'UNAUTHORIZED'])
    const foreign = await repair(sessionId, click, { token, origin: 'http://evil.example' })
    expect([foreign.status, foreign.body.code]).to.deep.equal([403, 'FORBIDDEN'])
    const stale = await repair(sessionId, { ...click, revision: completed.revision - 1 })
    expect([stale.status, stale.body.code]).to.deep.equal([409, 'REPAIR_STALE'])
    // None of them wrote anything: the task is complete at the same revision.
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: completed.revision })

    // A restart restores the proposal without applying it.
    await web.stop()
    web = await home.start()
    const restored = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(restored.status, JSON.stringify(restored.body)).to.equal(200)
    expect(restored.body.proposals.map((p: any) => [p.proposal.id, p.status])).to.deep.equal([[proposalId, 'pending']])
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: completed.revision })

    const confirmed = await repair(sessionId, click)
    expect(confirmed.status, JSON.stringify(confirmed.body)).to.equal(200)
    expect(confirmed.body.outcome).to.equal('reopened')
    await waitFor(async () => {
      const task = (await status(sessionId)).task
      return task.phase === 'complete' && task.revision > completed.revision
    }, 'the reopened task to complete again', 120_000)
    const again = await status(sessionId)
    expect(again.task.acceptanceCycle).to.equal(2)
    expect(again.history.length + (again.task.repairs ?? 0)).to.be.at.least(1)
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a repaired\n')
    expect(await readFile(join(workspace, 'b.txt'), 'utf8')).to.equal('b repaired\n')

    const served = model.requests.length
    const second = await repair(sessionId, click)
    expect([second.status, second.body.outcome]).to.deep.equal([200, 'already-applied'])
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect(model.requests.length, 'a second click wakes no turn').to.equal(served)

    // Files changed after a proposal: the click is refused with ARTIFACT_CHANGED and reopens nothing.
    const task = again.task
    const next = await repair(sessionId, { action: 'propose', taskId: task.id, revision: task.revision, reason: 'b.txt again', rootNodeIds: ['b'] })
    expect(next.status, JSON.stringify(next.body)).to.equal(200)
    await writeFile(join(workspace, 'c.txt'), 'written outside the agent\n')
    const changed = await repair(sessionId, { action: 'confirm', proposalId: next.body.proposalId, taskId: task.id, revision: task.revision })
    expect([changed.status, changed.body.code]).to.deep.equal([409, 'ARTIFACT_CHANGED'])
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: task.revision })
  })
  it('a decline through the authenticated route records it and keeps the task complete; a second proposal supersedes the first; both are in the history after a restart', async () => {
    const cwd = await mkdtemp(join(workspace, 'decline-'))
    const { sessionId } = await web.api('session.create', { cwd })
    main = sessionId
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)
    const done = (await status(sessionId)).task
    const binding = (proposalId: string) => ({ proposalId, taskId: done.id, revision: done.revision })

    const first = await repair(sessionId, { action: 'propose', taskId: done.id, revision: done.revision, title: 'a is wrong', reason: 'a.txt must say repaired', rootNodeIds: ['a'] })
    const second = await repair(sessionId, { action: 'propose', taskId: done.id, revision: done.revision, title: 'b is wrong', reason: 'b.txt must say repaired', rootNodeIds: ['b'] })
    expect([first.status, second.status], JSON.stringify([first.body, second.body])).to.deep.equal([200, 200])
    const listed = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(listed.body.proposals.map((p: any) => [p.proposal.id, p.status])).to.deep.equal([[first.body.proposalId, 'superseded'], [second.body.proposalId, 'pending']])
    // The superseded one can no longer be confirmed (nor declined), and that writes nothing.
    const log = async () => carriedEvents(sessionId, await web.api('session.history', { sessionId }))
    const before = (await log()).length
    const stale = await repair(sessionId, { action: 'confirm', ...binding(first.body.proposalId) })
    expect([stale.status, stale.body.code]).to.deep.equal([409, 'REPAIR_STALE'])
    const staleDecline = await repair(sessionId, { action: 'decline', ...binding(first.body.proposalId) })
    expect([staleDecline.status, staleDecline.body.code]).to.deep.equal([409, 'REPAIR_STALE'])
    // /task names the waiting one.
    expect((await status(sessionId)).awaitingDecision).to.include({ id: second.body.proposalId, title: 'b is wrong' })

    // A decline without the token or from another Origin is refused and writes nothing.
    const decline = { action: 'decline', ...binding(second.body.proposalId) }
    const noToken = await repair(sessionId, decline, {})
    expect([noToken.status, noToken.body.code]).to.deep.equal([401, 'UNAUTHORIZED'])
    const foreign = await repair(sessionId, decline, { token, origin: 'http://evil.example' })
    expect([foreign.status, foreign.body.code]).to.deep.equal([403, 'FORBIDDEN'])
    expect((await log()).length, 'the refused clicks wrote nothing').to.equal(before)

    const declined = await repair(sessionId, decline)
    expect([declined.status, declined.body.outcome], JSON.stringify(declined.body)).to.deep.equal([200, 'declined'])
    const repeated = await repair(sessionId, decline)
    expect([repeated.status, repeated.body.outcome]).to.deep.equal([200, 'already-declined'])
    const afterDecline = await status(sessionId)
    expect(afterDecline.task).to.include({ phase: 'complete', revision: done.revision })
    expect(afterDecline.awaitingDecision).to.equal(undefined)
    // Declined: confirming it now is stale, and nothing reopens.
    const late = await repair(sessionId, { action: 'confirm', ...binding(second.body.proposalId) })
    expect([late.status, late.body.code]).to.deep.equal([409, 'REPAIR_STALE'])

    await web.stop()
    web = await home.start()
    const history = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(history.status, JSON.stringify(history.body)).to.equal(200)
    expect(history.body.proposals.map((p: any) => [p.proposal.id, p.proposal.title, p.sourceLabel, p.status])).to.deep.equal([
      [first.body.proposalId, 'a is wrong', 'user', 'superseded'],
      [second.body.proposalId, 'b is wrong', 'user', 'declined'],
    ])
    expect(history.body.proposals[1].decline).to.include({ proposalId: second.body.proposalId, source: 'web-confirmation' })
    expect(history.body.current).to.deep.equal({ taskId: done.id, revision: done.revision, phase: 'complete' })
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: done.revision })
    const records = await log()
    expect(repairRecords(records, 'proposal')).to.have.length(2)
    expect(repairRecords(records, 'decline').map((e) => (e.data as any).payload.proposalId)).to.deep.equal([second.body.proposalId])
    expect(repairRecords(records, 'confirm')).to.have.length(0)
    expect(reopenedStates(records)).to.have.length(0)
  })

  it('the main agent proposes a repair citing evidence task_status names; citing an event that does not exist is refused, writing nothing', async () => {
    const cwd = await mkdtemp(join(workspace, 'evidence-'))
    const { sessionId } = await web.api('session.create', { cwd })
    main = sessionId
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)
    const done = (await status(sessionId)).task
    // One turn of the played agent: prompted, and over once its last message (after the prompt) is text only.
    const prompt = async (text: string) => {
      await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text }] })
      await waitFor(async () => {
        const events = (await web.api('session.history', { sessionId })).events.map((e: any) => e.event)
        const asked = events.findLastIndex((e: any) => e.type === 'user/message' && JSON.stringify(e.data).includes(text))
        const answer = events.findLastIndex((e: any) => e.type === 'assistant/message')
        return asked >= 0 && answer > asked && (events[answer].data?.message?.content ?? []).every((b: any) => b.type === 'text')
      }, 'the turn to end with an answer', 60_000)
    }
    const toolResults = async () => (await web.api('session.history', { sessionId })).events.filter((e: any) => e.event.type === 'tool/result')
      .map((e: any) => JSON.stringify(e.event.data))

    // A seq that is not in the log: the tool refuses it, coded, and nothing is proposed.
    await prompt('Propose a repair citing seq 999999.')
    expect((await toolResults()).filter((r: string) => r.includes('REPAIR_EVIDENCE_INVALID')), 'the refusal the agent read').to.have.length(1)
    expect((await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })).body.proposals).to.deep.equal([])
    expect(repairRecords(await carriedEvents(sessionId, await web.api('session.history', { sessionId })), 'proposal')).to.have.length(0)

    // The agent reads a.txt, finds that read's seq in task_status' evidence, and cites it.
    await prompt('Propose a repair of a.txt.')
    const listed = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(listed.body.proposals, JSON.stringify(listed.body)).to.have.length(1)
    const [tracked] = listed.body.proposals
    expect(tracked).to.include({ status: 'pending', sourceLabel: 'main agent' })
    expect(tracked.proposal).to.include({ source: 'main-agent', proposerSessionId: sessionId, taskId: done.id, taskRevision: done.revision })
    expect(tracked.proposal.evidenceSeqs).to.have.length(1)
    // The cited event is the agent's read of a.txt, quoted as on our host.
    expect(tracked.evidence).to.have.length(1)
    expect(tracked.evidence[0]).to.include({ seq: tracked.proposal.evidenceSeqs[0], type: 'tool/result' })
    expect(tracked.evidence[0].text).to.match(/^read: [\s\S]*a done/)
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: done.revision })
  })

  it('keeps the operator token out of DSH\'s output, files and session histories (only the patch layer holds it)', async () => {
    expect(web.output).to.not.include(token)
    const holders: string[] = []
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if (entry.isDirectory()) { if (entry.name !== 'node_modules') await walk(path); continue }
        if (!entry.isFile() || path === join(home.home, 'profiles', 'web', 'cordis.patch.yml')) continue
        if ((await readFile(path)).includes(token)) holders.push(path)
      }
    }
    await walk(home.home)
    expect(holders).to.deep.equal([])
    // Session logs are compressed on disk: read them through DSH.
    for (const { sessionId } of (await web.api('session.list', {})).items) {
      expect(JSON.stringify(await web.api('session.history', { sessionId }))).to.not.include(token)
    }
  })
})

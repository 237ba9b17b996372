import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { MockReply, MockRequest, OpenAIMock } from '@taskward/testkit'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, carrierEvents, execute, replyJson, taskward, waitFor } from './dsh-api'
import { contentOf, currentTurn, dshTaskPlayer } from './dsh-player'

/*
 * Consultations inside the real DSH host (seed 000: "the consultation uses supervisor_propose_repair";
 * proposals keep their source and proposer). `/task consult` in a supervised main session opens a DSH
 * session whose parent is that session; its played agent reads the main task with task_status, is
 * refused DSH's write/edit/bash after completion, and proposes with supervisor_propose_repair citing a
 * main-session seq — recorded in the main session with source `consultation` and the consultation as
 * proposer, also after a DSH restart. Any other session's supervisor_propose_repair is FORBIDDEN.
 */
describe('consultations inside the real DSH host', function () {
  this.timeout(600_000)
  const token = 'consult-operator-token-0123456789abcdef'
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string
  /** What each prompt's turn read back from its tools, by prompt. */
  const results = new Map<string, string[]>()
  /** The main-session seq each consultation turn cited. */
  const cited: number[] = []

  const player = dshTaskPlayer()
  const proposal = { title: 'a.txt is wrong', reason: 'a.txt says done but must say repaired', rootNodeIds: ['a'] }
  const fallback = (request: MockRequest): MockReply => {
    const messages: any[] = request.body.messages ?? []
    const { input, turn } = currentTurn(messages)
    const calls: string[] = turn.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []).map((c: any) => c.function.name)
    const seen = turn.filter((m) => m.role === 'tool').map(contentOf)
    const done = (reply: string) => { results.set(input, seen); return { text: reply } }
    if (input.startsWith('CONSULT-PROPOSE')) {
      // The consultation: read the main task, try to change the workspace, then propose citing main-session evidence.
      if (!calls.includes('task_status')) return { toolCalls: [{ name: 'task_status', args: {} }] }
      if (!calls.includes('write')) return { toolCalls: [{ name: 'write', args: { file_path: join(workspace, 'a.txt'), content: 'consultation wrote this\n' } }] }
      if (!calls.includes('edit')) return { toolCalls: [{ name: 'edit', args: { file_path: join(workspace, 'a.txt'), old_string: 'a done', new_string: 'a edited' } }] }
      if (!calls.includes('bash')) return { toolCalls: [{ name: 'bash', args: { command: `echo bash > ${join(workspace, 'bash.txt')}` } }] }
      if (!calls.includes('supervisor_propose_repair')) {
        let state: any
        try { state = JSON.parse(seen[0] ?? '') } catch { return done('task_status did not answer JSON.') }
        const evidence = (state.evidence ?? []).filter((e: any) => e.type === 'tool/result').at(-1)
        if (!evidence) return done('task_status lists no evidence.')
        cited.push(evidence.seq)
        return { toolCalls: [{ name: 'supervisor_propose_repair', args: { ...proposal, evidenceSeqs: [evidence.seq] } }] }
      }
      return done('Proposed.')
    }
    if (input.startsWith('CALL-SUPERVISOR-PROPOSE')) {
      if (!calls.includes('supervisor_propose_repair')) return { toolCalls: [{ name: 'supervisor_propose_repair', args: { ...proposal, evidenceSeqs: [1] } }] }
      return done('Called.')
    }
    return player(request)
  }
  useDsh({ player: fallback, workspace: 'consult', config: { operatorToken: token, ...PASSING_RECOVERY } }, (dsh) => ({ model, home, web, workspace } = dsh))

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))
  const repairs = async (sessionId: string) => (await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })).body
  /** One played turn: prompted, and over once the player answered it with text. */
  const prompt = async (sessionId: string, text: string) => {
    results.delete(text)
    await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text }] })
    await waitFor(() => results.has(text), `the turn "${text}" to end`, 60_000)
    return results.get(text)!
  }
  /** A new main session in `cwd` whose played task completed (two nodes, passing reviews and check; DSH's write does not overwrite unread files, so one per directory). */
  const completedMain = async (cwd: string) => {
    const { sessionId } = await web.api('session.create', { cwd })
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)
    return sessionId as string
  }

  it('opens a consultation of a complete task whose proposal is recorded in the main session as the consultation\'s; write/edit/bash refused; still a consultation after a restart', async () => {
    const sessionId = await completedMain(workspace)
    const done = (await status(sessionId)).task

    const opened = replyJson(await execute(web, sessionId, '/task consult'))
    expect(opened, JSON.stringify(opened)).to.include({ mainSessionId: sessionId, taskId: done.id, revision: done.revision })
    const consultation = opened.sessionId as string
    expect(consultation).to.be.a('string').and.not.equal(sessionId)

    const seen = await prompt(consultation, 'CONSULT-PROPOSE one')
    // Its agent works with DSH's own tools (the supervision preset mounted), not only Taskward's two.
    const first = model.requests.find((r) => JSON.stringify(r.body.messages).includes('CONSULT-PROPOSE one'))!
    expect(first.body.tools.map((t: any) => t.function.name)).to.include.members(['read', 'glob', 'grep', 'task_status', 'supervisor_propose_repair'])
    // task_status answered the MAIN session's complete task.
    const read = JSON.parse(seen[0])
    expect(read).to.include({ mainSessionId: sessionId })
    expect(read.task).to.include({ id: done.id, phase: 'complete' })
    // DSH's write, edit and bash were refused before they ran.
    for (const refused of seen.slice(1, 4)) expect(refused).to.match(/REPAIR_CONFIRMATION_REQUIRED/)
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a done\n')
    expect(existsSync(join(workspace, 'bash.txt'))).to.equal(false)
    expect(seen[4], seen[4]).to.match(/"outcome": "proposed"/)

    const listed = await repairs(sessionId)
    expect(listed.proposals, JSON.stringify(listed)).to.have.length(1)
    const [tracked] = listed.proposals
    expect(tracked).to.include({ status: 'pending', sourceLabel: 'consultation' })
    expect(tracked.proposal).to.include({ source: 'consultation', proposerSessionId: consultation, taskId: done.id, taskRevision: done.revision })
    expect(tracked.proposal.evidenceSeqs).to.deep.equal([cited[0]])
    // The cited seq is the main session's event, quoted from its log.
    expect(tracked.evidence.map((e: any) => [e.seq, e.type])).to.deep.equal([[cited[0], 'tool/result']])
    // Nothing is proposed into the consultation itself.
    expect((await repairs(consultation)).proposals ?? []).to.deep.equal([])

    // After a restart the session is still a consultation: offered its tool, held to the main task.
    await web.stop()
    web = await home.start()
    const again = await prompt(consultation, 'CONSULT-PROPOSE two')
    for (const refused of again.slice(1, 4)) expect(refused).to.match(/REPAIR_CONFIRMATION_REQUIRED/)
    expect(again[4], again[4]).to.match(/"outcome": "(proposed|identical-pending)"/)
    const restored = await repairs(sessionId)
    expect(restored.proposals.every((p: any) => p.proposal.source === 'consultation' && p.proposal.proposerSessionId === consultation)).to.equal(true)
    expect(restored.proposals.at(-1).proposal.evidenceSeqs).to.deep.equal([cited[1]])
    expect((await status(sessionId)).task).to.include({ phase: 'complete', revision: done.revision })
  })

  it('refuses supervisor_propose_repair (FORBIDDEN) from the main agent, a session Taskward never supervised, and sessions carrying a forged consultation marker (no DSH parent; another main than their DSH parent)', async () => {
    const main = await completedMain(await mkdtemp(join(workspace, 'refusals-')))
    expect((await prompt(main, 'CALL-SUPERVISOR-PROPOSE main'))[0]).to.match(/FORBIDDEN/)

    const { sessionId: plain } = await web.api('session.create', { cwd: workspace })
    expect((await prompt(plain, 'CALL-SUPERVISOR-PROPOSE plain'))[0]).to.match(/FORBIDDEN/)

    // Forged markers: one naming the main session in a session DSH does not record as its child, and
    // one in the main session's reviewer (its DSH parent: the main session) naming another session.
    const { sessionId: forged } = await web.api('session.create', { cwd: workspace })
    await prompt(forged, 'CALL-SUPERVISOR-PROPOSE forged before')
    const records = JSON.stringify(carriedEvents(main, await web.api('session.history', { sessionId: main })))
    const reviewer = /"reviewerSessionId":"([^"]+)"/.exec(records)?.[1]
    expect(reviewer, 'a reviewer session of the main task').to.be.a('string')
    await web.stop()
    await home.appendToLog(forged, carrierEvents(forged, 'dsh/consultation-opened', { mainSessionId: main }))
    await home.appendToLog(reviewer!, carrierEvents(reviewer!, 'dsh/consultation-opened', { mainSessionId: plain }))
    web = await home.start()
    // After the restart nothing is open: several reads at once each open the main session (or wait for it).
    const opened = await Promise.all(Array.from({ length: 6 }, () => taskward(web, `/api/sessions/${main}/repairs`, { token })))
    expect(opened.map((answer) => answer.status), JSON.stringify(opened.map((answer) => answer.body))).to.deep.equal(Array(6).fill(200))
    expect((await prompt(forged, 'CALL-SUPERVISOR-PROPOSE forged'))[0]).to.match(/FORBIDDEN/)
    expect((await prompt(reviewer!, 'CALL-SUPERVISOR-PROPOSE reviewer'))[0]).to.match(/FORBIDDEN/)

    const after = await repairs(main)
    expect(after.proposals, JSON.stringify(after)).to.deep.equal([])
    // /task consult is a main session's: from a consultation it is refused.
    const { sessionId: consultation } = replyJson(await execute(web, main, '/task consult'))
    expect(String((await execute(web, consultation, '/task consult')).text)).to.match(/^FORBIDDEN/)
    // Words after it are refused, not dropped: the question belongs in the consultation.
    expect(String((await execute(web, main, '/task consult why did the check fail?')).text)).to.match(/^BAD_REQUEST: \/task consult takes nothing after it/)
  })
})

import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { mockText, PAGE_KEYS, pageShape, STAGE_PAGE_SHAPE, type OpenAIMock } from '@taskward/testkit'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { commandText, execute, replyJson, waitFor } from './dsh-api'
import { contentOf, dshTaskPlayer } from './dsh-player'
import { access } from 'node:fs/promises'

/*
 * M3 against the real DSH host: the supervisor's task tools offered to DSH's agent, plan, stage and
 * completion reviews each in its own DSH reviewer session, a two-node task from /task new to
 * completion with the loopback endpoint playing the agent and the reviewers.
 */
describe('a supervised task inside the real DSH host', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string
  let completed: string | undefined

  useDsh({ player: dshTaskPlayer({ reviewerTries: true, reviewerReads: true }), workspace: 'task', config: PASSING_RECOVERY }, (dsh) => ({ model, home, web, workspace } = dsh))

  // On failure: what the model was asked, and DSH's output.
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !model) return
    for (const r of model.requests) {
      const ms: any[] = r.body.messages ?? []
      console.log('      model', ms.length, ms.slice(-3).map((m) => `${m.role}: ${JSON.stringify(m.content ?? m.tool_calls).slice(0, 200)}`).join(' | '))
    }
    console.log(web.output.slice(-3000))
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))

  it('runs a two-node task from /task new to completion: task tools, reviews in DSH reviewer sessions', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    expect((model.requests[0]?.body.tools ?? []).length).to.equal(0)
    const created = replyJson(await execute(web, sessionId, '/task new Write a.txt and b.txt'))
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review to pass', 60_000)
    // The task tools were offered to DSH's agent next to DSH's own.
    const offered = model.requests[0].body.tools.map((t: any) => t.function.name)
    expect(offered).to.include.members(['task_status', 'task_submit_plan', 'task_start_node', 'task_report_stage', 'task_request_completion', 'write', 'bash'])
    // The reviewer's own tools are offered to reviewer agents only.
    expect(offered).to.not.include.members(['review_read_log'])
    expect(offered).to.not.include.members(['review_verdict'])

    // The plan turn ends (slowly, see the player) before the approval: the node's log then starts with the controller's turn.
    await waitFor(async () => (await web.api('session.list', {})).items.some((s: any) => s.sessionId === sessionId && !s.running), 'the plan turn to end')
    // /task status reads as text in DSH (the same words as our host's statusText).
    const words = commandText(await execute(web, sessionId, '/task status'))
    expect(words).to.include(`Task ${created.taskId} (revision `).and.include('Phase: awaiting approval')
    expect(words).to.include('  a: write a — not started').and.include('  b: write b (after a) — not started')
    expect(words).to.include('Waiting for you: approve the plan with /task approve')
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'the task to complete', 120_000)
    const done = await status(sessionId)
    expect(done.task).to.include({ id: created.taskId })
    expect(done.nodes.map((n: any) => [n.id, n.status])).to.deep.equal([['a', 'passed'], ['b', 'passed']])
    const doneWords = commandText(await execute(web, sessionId, '/task'))
    expect(doneWords).to.include('Phase: complete').and.include('  a: write a — passed').and.include('  b: write b (after a) — passed')
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a done\n')
    expect(await readFile(join(workspace, 'b.txt'), 'utf8')).to.equal('b done\n')

    // Every review ran in its own DSH session working for this one (plan, a, b, completion).
    const reviewers = (await web.api('session.list', {})).items.filter((s: any) => s.sessionId !== sessionId)
    expect(reviewers.length).to.be.at.least(4)
    const reviewerInputs = model.requests.map((r) => r.body.messages ?? []).filter((m: any[]) => m.some((x) => typeof x.content === 'string' && x.content.startsWith('You review a ')))
    expect(reviewerInputs.length).to.be.at.least(4)
    const reviewerOffer = model.requests.find((r) => (r.body.messages ?? []).some((x: any) => typeof x.content === 'string' && x.content.startsWith('You review a ')))!
    // A reviewer is offered its two tools and DSH's own read-only file tools, nothing that writes or runs.
    for (const offer of model.requests.filter((r) => (r.body.messages ?? []).some((x: any) => typeof x.content === 'string' && x.content.startsWith('You review a ')))) {
      expect(offer.body.tools.map((t: any) => t.function.name).sort()).to.deep.equal(['glob', 'grep', 'read', 'review_read_log', 'review_verdict'])
    }
    // A reviewer's write (not offered) was refused before anything ran.
    const reviewerResults = reviewerInputs.flatMap((m: any[]) => m.filter((x) => x.role === 'tool').map(contentOf))
    const writes = reviewerResults.filter((r) => /write/.test(r) && /FORBIDDEN|not found|unknown|not available/i.test(r))
    expect(writes.length, reviewerResults.join('\n---\n').slice(0, 3000)).to.be.at.least(1)
    await access(join(workspace, 'reviewer.txt')).then(() => expect.fail('a reviewer wrote a file'), () => {})
    // A stage reviewer read the node's file with DSH's read.
    expect(reviewerResults.some((r) => r.includes('a done'))).to.equal(true)
    // The stage review of node a got the same page shape as on our own host (supervisor-review-page.spec.ts).
    const isPage = (x: any) => x.role === 'tool' && contentOf(x).includes('"cutoffSeq"')
    const stageA = model.requests.map((r) => r.body.messages ?? []).find((m: any[]) => m.some((x) => typeof x.content === 'string'
      && x.content.startsWith('You review a stage') && x.content.includes('Node under review: a.')) && m.some(isPage))!
    const pageText = contentOf(stageA.find(isPage))
    const page = JSON.parse(pageText)
    expect(pageShape(page), JSON.stringify(page).slice(0, 3000)).to.deep.equal(['user/message {seq,text,type}', ...STAGE_PAGE_SHAPE])
    expect(Object.keys(page).sort()).to.deep.equal(PAGE_KEYS)
    // The write's whole arguments, as an object (DSH logs them as the streamed JSON text).
    expect(page.events.find((e: any) => e.name === 'write').args).to.deep.equal({ file_path: join(workspace, 'a.txt'), content: 'a done\n' })
    expect(page.skipped).to.be.greaterThan(0)
    expect(Buffer.byteLength(pageText)).to.be.below(51_200)
    completed = sessionId
  })

  it('after completion refuses DSH\'s own write, edit and bash and an unknown tool with REPAIR_CONFIRMATION_REQUIRED', async function () {
    if (!completed) return this.skip()
    const served = model.requests.length
    model.script(
      { toolCalls: [
        { name: 'write', args: { file_path: join(workspace, 'a.txt'), content: 'changed after completion\n' } },
        { name: 'edit', args: { file_path: join(workspace, 'b.txt'), old_string: 'b done', new_string: 'b changed' } },
        { name: 'bash', args: { command: 'echo changed > c.txt', description: 'write c.txt' } },
        { name: 'frobnicate', args: {} },
        { name: 'read', args: { file_path: join(workspace, 'a.txt') } },
      ] },
      mockText('I may not change the accepted work without a confirmed repair.'),
    )
    await web.api('session.prompt', { sessionId: completed, mode: 'queue', content: [{ type: 'text', text: 'Change a.txt and b.txt, please.' }] })
    await waitFor(() => model.requests.length >= served + 2, 'the turn with the refused calls')
    // The tool results of this step: the last five messages DSH sends.
    const results = (model.requests[served + 1].body.messages as any[]).slice(-5).map((m) => { expect(m.role).to.equal('tool'); return contentOf(m) })
    for (const refused of results.slice(0, 4)) expect(refused).to.include('REPAIR_CONFIRMATION_REQUIRED')
    // read is read-only: allowed.
    expect(results[4]).to.include('a done')
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).to.equal('a done\n')
    expect(await readFile(join(workspace, 'b.txt'), 'utf8')).to.equal('b done\n')
    await access(join(workspace, 'c.txt')).then(() => expect.fail('bash ran'), () => {})
  })

  it('holds a reviewer session DSH brings back after a restart to read-only tools (a person reopening an old one)', async function () {
    if (!completed) return this.skip()
    const reviewer = (await web.api('session.list', {})).items.find((s: any) => s.sessionId !== completed)
    await web.stop()
    web = await home.start()
    const served = model.requests.length
    await web.api('session.prompt', { sessionId: reviewer.sessionId, mode: 'queue', content: [{ type: 'text', text: 'Write x.txt with bash, please.' }] })
    await waitFor(() => model.requests.length > served, 'the reopened reviewer\'s step')
    const offered: string[] = model.requests[served].body.tools.map((t: any) => t.function.name)
    expect(offered.filter((name) => !['read', 'glob', 'grep'].includes(name)), offered.join(', ')).to.deep.equal([])
    await access(join(workspace, 'x.txt')).then(() => expect.fail('a reviewer wrote a file'), () => {})
  })

  it('leaves the tools of a user\'s fork alone (it has a parent, but is no Taskward reviewer)', async function () {
    if (!completed) return this.skip()
    const { sessionId: fork } = await web.api('session.fork', { sessionId: completed })
    const served = model.requests.length
    await web.api('session.prompt', { sessionId: fork, mode: 'queue', content: [{ type: 'text', text: 'What is in a.txt?' }] })
    await waitFor(() => model.requests.length > served, 'the fork\'s step')
    const offered: string[] = model.requests[served].body.tools.map((t: any) => t.function.name)
    expect(offered, offered.join(', ')).to.include.members(['read', 'write', 'bash'])
  })
})

import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import type { Browser } from 'playwright-core'
import { RECORD_EVENT_TYPE, REPAIR_NAMESPACE } from '@taskward/protocol'
import type { OpenAIMock } from '@taskward/testkit'
import { launchBrowser } from '../console-fixtures'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, execute, replyJson, taskward, waitFor } from './dsh-api'
import { dshTaskPlayer } from './dsh-player'

/*
 * Taskward's web console served by the real DSH host's web server (under /taskward): `/task console`
 * answers a one-time login link, Chromium opens it, sees the pending proposal's impact and clicks
 * Confirm; the task reopens (read back through /task and the log). The link does not log in twice,
 * and a cross-origin change is refused.
 */
describe('the console inside the real DSH host', function () {
  this.timeout(600_000)
  const token = randomBytes(32).toString('base64url')
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let browser: Browser
  let workspace: string

  useDsh({ player: dshTaskPlayer(), workspace: 'console', config: { operatorToken: token, ...PASSING_RECOVERY } },
    (dsh) => ({ model, home, web, workspace } = dsh))
  before(async () => { if (home) browser = await launchBrowser() })
  after(async () => { await browser?.close() })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))

  it('opens the impact panel through the /task console link, Confirm reopens the task; the link works once; a cross-origin POST is refused', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    await execute(web, sessionId, '/task approve')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'complete', 'completion', 120_000)
    const completed = (await status(sessionId)).task
    const proposed = await taskward(web, `/api/sessions/${sessionId}/repair`, {
      token, body: { action: 'propose', taskId: completed.id, revision: completed.revision, reason: 'a.txt must say repaired', rootNodeIds: ['a'] },
    })
    expect(proposed.status, JSON.stringify(proposed.body)).to.equal(200)

    // `/task` itself says a proposal waits and where to decide.
    const overview = await status(sessionId)
    expect(overview.awaitingDecision, JSON.stringify(overview)).to.include({ id: proposed.body.proposalId })
    expect(overview.awaitingDecision.link).to.equal(`/taskward/sessions/${sessionId}#impact`)

    const answer = replyJson(await execute(web, sessionId, '/task console'))
    expect(answer.awaitingDecision).to.include({ id: proposed.body.proposalId })
    const link = new URL(answer.url)
    expect(link.origin).to.equal(web.origin)
    expect(link.pathname).to.equal('/taskward/login')
    expect(link.searchParams.has('token'), 'the link never carries the operator token').to.equal(false)

    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(answer.url)
    expect(new URL(page.url()).pathname).to.equal(`/taskward/sessions/${sessionId}`)
    await page.waitForSelector('#impact')
    expect(await page.textContent('#impact .affected-list')).to.equal('a, b')
    expect(await page.textContent('#impact .reason')).to.include('a.txt must say repaired')
    const [cookie] = (await context.cookies()).filter((c) => c.name === 'taskward_token')
    expect(cookie).to.include({ httpOnly: true, sameSite: 'Strict' })
    // DSH's own app holds the conversation: no operator controls on this page.
    expect(await page.locator('#conversation').count()).to.equal(0)

    await page.click('#confirm-repair')
    await page.waitForSelector('#action-outcome[data-outcome="reopened"]')
    const reopened = (await status(sessionId)).task
    expect(reopened.revision).to.be.greaterThan(completed.revision)
    expect(reopened.acceptanceCycle).to.equal(2)
    const history = await web.api('session.history', { sessionId })
    const confirms = carriedEvents(sessionId, history).filter((e: any) => e.type === RECORD_EVENT_TYPE && e.data?.namespace === REPAIR_NAMESPACE && e.data.kind === 'confirm')
    expect(confirms.map((e: any) => e.data.payload.proposalId), 'one confirmation in the log').to.deep.equal([proposed.body.proposalId])

    // The same link, a second time (another browser): refused, no cookie.
    const again = await fetch(answer.url, { redirect: 'manual' })
    expect(again.status).to.equal(401)
    expect(((await again.json()) as any).code).to.equal('UNAUTHORIZED')
    expect(again.headers.get('set-cookie')).to.equal(null)
    const other = await browser.newContext()
    const second = await (await other.newPage()).goto(answer.url)
    expect(second?.status()).to.equal(401)
    expect((await other.cookies()).filter((c) => c.name === 'taskward_token')).to.have.length(0)
    await other.close()

    // A change sent with the browser's cookie from another origin is refused and writes nothing.
    const task = (await status(sessionId)).task
    const foreign = await fetch(`${web.origin}/taskward/api/sessions/${sessionId}/repair`, {
      method: 'POST',
      headers: { cookie: `taskward_token=${cookie.value}`, origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'propose', taskId: task.id, revision: task.revision, reason: 'forged', rootNodeIds: ['a'] }),
    })
    expect(foreign.status).to.equal(403)
    expect(((await foreign.json()) as any).code).to.equal('FORBIDDEN')
    const listed = await taskward(web, `/api/sessions/${sessionId}/repairs`, { token })
    expect(listed.body.proposals.map((p: any) => p.proposal.reason)).to.not.include('forged')
    await context.close()
  })
})

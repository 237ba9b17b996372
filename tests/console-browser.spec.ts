import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { TOKEN_COOKIE } from '@taskward/host'
import { impactNote, STAMP_CAVEAT } from '@taskward/protocol'
import { bootDemoHost, launchBrowser, openSession, repairRecords, screenshot, until, type DemoHost } from './console-fixtures'

/** The console in a real browser (Debian chromium through playwright-core) against a real host. */
describe('console in the browser', function () {
  this.timeout(60_000)
  let browser: Browser
  let demo: DemoHost
  let page: Page

  before(async () => {
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
  })
  beforeEach(async () => {
    demo = await bootDemoHost()
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  })
  afterEach(async () => {
    await page?.close()
    await demo?.dispose()
  })

  const dagNode = (id: string, scope = '#current') => page.locator(`${scope} svg.dag g.node[data-node-id="${id}"]`)
  const phase = async () => (await demo.host.ctx.supervisor.state(demo.session)).current!

  it('shows the completed task, its DAG and the affected nodes; Confirm reopening shows cycle 2 and writes one receipt', async () => {
    await page.goto(demo.host.ctx.connection.loginUrl)
    await page.waitForSelector('.session-item')
    expect(await page.textContent('.session-item .waiting')).to.include('English greeting lacks the exclamation mark')
    await screenshot(page, 'sessions')
    await page.click('.session-item a')
    await page.waitForSelector('#impact')

    expect(await page.getAttribute('#current [data-phase]', 'data-phase')).to.equal('complete')
    expect(await page.textContent('#current .cycle')).to.include('1 (implicit first cycle)')
    for (const id of ['core', 'en', 'de', 'cli']) expect(await dagNode(id).getAttribute('data-status')).to.equal('passed')
    // The proposal's root and its descendants are highlighted; the independent branch is not.
    expect(await dagNode('en').getAttribute('data-affected')).to.equal('true')
    expect(await dagNode('cli').getAttribute('data-affected')).to.equal('true')
    expect(await dagNode('core').getAttribute('data-affected')).to.equal('false')
    expect(await dagNode('de').getAttribute('data-affected')).to.equal('false')
    expect(await page.textContent('#impact .source')).to.include('main agent')
    expect(await page.textContent('#impact .affected-list')).to.equal('en, cli')
    expect(await page.textContent('#impact .evidence')).to.include('read')
    expect(await page.textContent('#impact .stamp')).to.match(/\d+ files, .* digest [0-9a-f]{12}/)
    // The impact panel's words are the view's (one place, shared with DSH's panel): the note with the stamp's caveat.
    expect(await page.textContent('#impact .note')).to.equal(impactNote((await phase()).id, 1)).and.to.include(STAMP_CAVEAT)
    expect(await page.locator('#current table.reviews tbody tr').count()).to.equal(6)
    expect(await page.locator('#overview-link a[href="#impact"]').count()).to.equal(1)
    await screenshot(page, 'impact')

    await page.click('#confirm-repair')
    await page.waitForSelector('#action-outcome[data-outcome="reopened"]')
    expect(await page.textContent('#action-outcome')).to.include('acceptance cycle 2')
    await until(async () => (await page.textContent('#current .cycle'))?.trim() === '2', 'the page to show cycle 2')
    expect(await dagNode('en').getAttribute('data-status')).to.equal('pending')
    expect(await dagNode('cli').getAttribute('data-status')).to.equal('pending')
    expect(await dagNode('de').getAttribute('data-status')).to.equal('passed')
    expect(await page.textContent('#current tr[data-node-id="en"]')).to.include('2')
    expect(await page.textContent('#current .repair-history')).to.include('Cycle 1')
    await screenshot(page, 'reopened')

    expect(await repairRecords(demo.session, 'confirm')).to.have.length(1)
    const task = await phase()
    expect(task).to.include({ phase: 'active', acceptanceCycle: 2 })
  })

  it('explains ARTIFACT_CHANGED when a file changed after the proposal, and writes nothing', async () => {
    await openSession(page, demo)
    await page.waitForSelector('#impact')
    const before = demo.session.seq
    await writeFile(join(demo.outcome.directory, 'src', 'en.js'), 'export const en = (name) => `Hello, ${name}!`\n')
    await page.click('#confirm-repair')
    await page.waitForSelector('#action-outcome[data-code="ARTIFACT_CHANGED"]')
    expect(await page.textContent('#action-outcome')).to.include('Files changed since the proposal; propose again')
    await screenshot(page, 'artifact-changed')
    expect(await repairRecords(demo.session, 'confirm')).to.have.length(0)
    expect(demo.session.seq).to.equal(before)
    expect((await phase()).phase).to.equal('complete')
    // The impact panel is still there: the user can decline or wait for a refreshed proposal.
    expect(await page.locator('#confirm-repair').count()).to.equal(1)
  })

  it('Decline keeps the task complete; a proposal from the form appears with source "user"', async () => {
    await openSession(page, demo)
    await page.waitForSelector('#impact')
    await page.click('#decline-repair')
    await page.waitForSelector('#action-outcome[data-outcome="declined"]')
    await until(async () => await page.locator('#impact').count() === 0, 'the impact panel to close')
    expect(await page.getAttribute('#current [data-phase]', 'data-phase')).to.equal('complete')
    expect((await phase()).phase).to.equal('complete')
    expect(await repairRecords(demo.session, 'decline')).to.have.length(1)
    expect(await page.getAttribute(`.proposal-list li[data-proposal-id="${demo.outcome.proposalId}"]`, 'data-status')).to.equal('declined')

    await page.fill('#propose-current-reason', 'The German greeting should use "Guten Tag" in formal mode.')
    await page.check('#propose-current-root-de')
    await screenshot(page, 'propose')
    await page.click('form.propose button[type="submit"]')
    await page.waitForSelector('#action-outcome[data-outcome="proposed"]')
    await page.waitForSelector('#impact')
    expect(await page.textContent('#impact .source')).to.equal('user')
    expect(await page.textContent('#impact .affected-list')).to.equal('de, cli')
    expect(await page.textContent('#impact .reason')).to.include('Guten Tag')
    expect(await dagNode('de').getAttribute('data-affected')).to.equal('true')
    expect(await dagNode('en').getAttribute('data-affected')).to.equal('false')
    const proposals = await repairRecords(demo.session, 'proposal')
    expect(proposals).to.have.length(2)
    expect(proposals[1].data.payload).to.include({ source: 'user' })
    expect(proposals[1].data.payload.evidenceSeqs).to.deep.equal([])
  })

  it('is keyboard-operable: Tab reaches Confirm reopening and Enter presses it', async () => {
    await openSession(page, demo)
    await page.waitForSelector('#confirm-repair')
    await page.locator('body').focus()
    let reached = false
    for (let i = 0; i < 80 && !reached; i++) {
      await page.keyboard.press('Tab')
      // Evaluated in the page (a string, so this Node-side file needs no DOM types).
      reached = await page.evaluate("document.activeElement?.id === 'confirm-repair'")
    }
    expect(reached, 'Tab never focused the Confirm button').to.equal(true)
    // The focus ring is visible (the :focus-visible outline is drawn).
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')
    expect(outline).to.equal('solid')
    await page.keyboard.press('Enter')
    await page.waitForSelector('#action-outcome[data-outcome="reopened"]')
    await until(async () => (await page.textContent('#current .cycle'))?.trim() === '2', 'the page to show cycle 2')
    expect(await repairRecords(demo.session, 'confirm')).to.have.length(1)
  })

  it('updates live: a decision made elsewhere reaches the open page through the event stream', async () => {
    await openSession(page, demo)
    await page.waitForSelector('#impact')
    await until(async () => (await page.textContent('#live')) === 'live', 'the event stream to connect')
    const { proposalId, taskId, sessionId } = demo.outcome
    const response = await demo.host.http.post(`/api/sessions/${sessionId}/repair`, { action: 'decline', proposalId, taskId, revision: (await phase()).revision })
    expect(response.status).to.equal(200)
    await until(async () => await page.locator('#impact').count() === 0, 'the page to drop the impact panel')
    expect(await page.getAttribute(`.proposal-list li[data-proposal-id="${proposalId}"]`, 'data-status')).to.equal('declined')
  })

  it('answers 401 without the login cookie and refuses a forged cross-origin POST', async () => {
    const url = demo.host.url
    const { sessionId, proposalId, taskId } = demo.outcome
    const response = await page.goto(`${url}/sessions/${sessionId}`)
    expect(response!.status()).to.equal(401)
    expect((await page.goto(`${url}/api/console/sessions/${sessionId}/view`))!.status()).to.equal(401)
    expect((await page.goto(`${url}/`))!.status()).to.equal(401)

    // A page on another origin posts with the victim's cookie attached: the Origin check refuses it.
    const cookie = `${TOKEN_COOKIE}=${encodeURIComponent(demo.host.operatorToken)}`
    const revision = (await phase()).revision
    const forged = await fetch(`${url}/api/sessions/${sessionId}/repair`, {
      method: 'POST',
      headers: { cookie, origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'confirm', proposalId, taskId, revision }),
    })
    expect(forged.status).to.equal(403)
    expect(((await forged.json()) as { code: string }).code).to.equal('FORBIDDEN')
    // From a real cross-site page the SameSite=Strict cookie is not even sent.
    await openSession(page, demo)
    const other = await browser.newPage()
    await other.goto(`http://localhost:${demo.host.port}/health`)
    const status = await other.evaluate(async ({ target, body }) => {
      const res = await fetch(target, { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body })
      return res.type
    }, { target: `${url}/api/sessions/${sessionId}/repair`, body: JSON.stringify({ action: 'confirm', proposalId, taskId, revision }) })
    await other.close()
    expect(status).to.equal('opaque')
    expect(await repairRecords(demo.session, 'confirm')).to.have.length(0)
    expect((await phase()).phase).to.equal('complete')
  })
})

import { expect } from 'chai'
import type { Browser, Page } from 'playwright-core'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import * as Audit from '@taskward/example-plugin-audit'
import { WebConsole } from '../plugins/console/src'
import { callTool, driveToApproval, reviewsSettled, runTool, scriptReviewer } from '@taskward/testkit'
import { launchBrowser } from './console-fixtures'
import { bootOperatorHost, createSession, type OperatorHost } from './operator-fixtures'

/**
 * A plugin's coded refusal reaches the console intact (docs/plugins.md §4, issue 14's bar): the
 * transcript shows its code, its message and its `details`, for a command reply and a tool result alike.
 */
describe('console: a plugin refusal keeps its details in the transcript', function () {
  this.timeout(60_000)
  let browser: Browser
  let op: OperatorHost
  let page: Page

  before(async () => { browser = await launchBrowser() })
  after(async () => { await browser?.close() })
  beforeEach(async () => {
    op = await bootOperatorHost([[SupervisorPlugin, { automaticContinuation: false }], [WebConsole, { demo: false }], [Audit, { requireNote: true }]], ['supervisor', 'webConsole'])
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  })
  afterEach(async () => {
    await page?.close()
    await op?.dispose()
  })

  it('shows a command refusal\'s and a tool refusal\'s details as JSON next to the code', async () => {
    const sessionId = await createSession(op.host, { cwd: 'audit', create: true })
    const session = await op.host.ctx.sessions.get(sessionId)
    // A tool refusal with details: the audit gate's, recorded as the tool result.
    await driveToApproval(op.host, session)
    expect((await op.host.http.post(`/api/sessions/${sessionId}/input`, { text: '/task audit frobnicate' })).status).to.equal(400)
    await runTool(op.host, session, 'task_start_node', { nodeId: 'a' })
    scriptReviewer(op.host, 'pass')
    await runTool(op.host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(op.host, session)
    const refused = await callTool(op.host, session, 'task_request_completion')
    expect(refused.error).to.deep.include({ code: 'audit.note_missing' })
    await page.goto(`${op.host.ctx.connection.loginUrl}&next=${encodeURIComponent(`/sessions/${sessionId}`)}`)
    await page.waitForSelector('#transcript .msg.refusal[data-code="audit.usage"]')
    const reply = await page.textContent('#transcript .msg.refusal[data-code="audit.usage"]')
    expect(reply).to.include('Unknown "/task audit frobnicate"')
    const shown = await page.textContent('#transcript .msg.refusal[data-code="audit.usage"] .refusal-details')
    expect(JSON.parse(shown!)).to.deep.equal({ verb: 'frobnicate' })
    const tool = '#transcript details.tool[data-code="audit.note_missing"]'
    await page.waitForSelector(tool)
    expect(JSON.parse((await page.textContent(`${tool} .refusal-details`))!)).to.deep.equal(refused.error!.details)
  })
})

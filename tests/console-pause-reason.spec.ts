import { expect } from 'chai'
import type { Browser, Page } from 'playwright-core'
import { removeTree, TestHost } from '@taskward/testkit'
import { WebConsole } from '../plugins/console/src'
import { ANSWER_CHECK, answerWorkspace, budgetStoppedTask, phase, plugins } from '../plugins/recovery/tests/fixtures'
import { launchBrowser } from './console-fixtures'

/** The console says why a task is paused: a used-up recovery budget shows as such, in a real browser. */
describe('console: the pause reason of a task', function () {
  this.timeout(60_000)
  let browser: Browser
  let host: TestHost
  let page: Page
  let cwd: string

  before(async () => {
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
  })
  afterEach(async () => {
    await page?.close()
    await host?.ctx.recovery?.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  it('shows "a budget is used up" for a task the recovery budget paused', async () => {
    host = await TestHost.boot({
      plugins: [...plugins({ checks: [ANSWER_CHECK], budgets: { maxAttempts: 2 } }), [WebConsole, { demo: false }]],
      waitFor: ['workspace', 'supervisor', 'recovery', 'webConsole'],
    })
    cwd = await answerWorkspace('alpha')
    const session = await budgetStoppedTask(host, cwd)
    expect(await phase(host, session)).to.include({ pauseReason: 'budget' })

    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
    await page.goto(`${host.ctx.connection.loginUrl}&next=${encodeURIComponent(`/sessions/${session.id}`)}`)
    await page.waitForSelector('#current .pause-reason')
    expect(await page.getAttribute('#current [data-phase]', 'data-phase')).to.equal('paused')
    expect(await page.getAttribute('#current .pause-reason', 'data-pause-reason')).to.equal('budget')
    expect(await page.textContent('#current .task-facts')).to.include('Paused (a budget is used up; raise it, then /task resume)')
  })
})

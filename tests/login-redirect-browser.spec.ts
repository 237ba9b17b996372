import { expect } from 'chai'
import type { Browser } from 'playwright-core'
import { TestHost } from '@taskward/testkit'
import { launchBrowser } from './console-fixtures'

/**
 * The login link's `next` in a real browser (Debian chromium): the spellings that browsers read as
 * another host (backslashes, a tab or newline inside `//`) must never leave this host's origin.
 */
describe('login redirect in chromium', () => {
  let host: TestHost
  let browser: Browser
  before(async () => {
    host = await TestHost.boot()
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await host?.dispose()
  })

  for (const next of ['/\\evil.example', '/%5Cevil.example', '/%09/evil.example', '/%0A/evil.example', '//evil.example', '/.//evil.example']) {
    it(`stays on the host for next=${next}`, async () => {
      const page = await browser.newPage()
      const requested: string[] = []
      // Answer anything off-site here, so the test sees the attempt without any network.
      await page.route((url) => url.origin !== host.url, async (route) => {
        requested.push(route.request().url())
        await route.fulfill({ status: 200, body: 'off-site' })
      })
      await page.goto(`${host.url}/login?token=${encodeURIComponent(host.operatorToken)}&next=${next}`)
      expect(new URL(page.url()).origin).to.equal(host.url)
      expect(requested).to.deep.equal([])
      await page.close()
    })
  }
})

import { expect } from 'chai'
import { createServer } from 'node:net'
import { lighthouseReport } from './lighthouse-audit'

/*
 * The Lighthouse runner of console-lighthouse.spec.ts sends the operator token (the login link, an
 * Authorization header) to the audit. A failed run must not print it: its error lands in the test
 * output (a CI log).
 */
describe('console: the Lighthouse runner', function () {
  this.timeout(60_000)

  it('fails with an error that names neither the login link\'s token nor the Authorization header', async () => {
    // A port where no browser listens: the audit fails at once.
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    await new Promise((resolve) => server.close(resolve))
    const token = 'op-token-that-must-not-be-printed'
    let failure: any
    try {
      await lighthouseReport(`http://127.0.0.1:1/login?token=${token}`, port, {
        extends: 'lighthouse:default',
        settings: { onlyCategories: ['seo'], extraHeaders: { Authorization: `Bearer ${token}` } },
      }, token)
    } catch (error) {
      failure = error
    }
    expect(failure, 'the audit of a browser that is not there succeeded').to.be.instanceOf(Error)
    expect(String(failure.message) + String(failure.stack) + String(failure.cmd ?? '') + String(failure.stderr ?? '')).not.to.include(token)
  })
})

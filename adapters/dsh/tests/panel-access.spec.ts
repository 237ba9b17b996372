import { expect } from 'chai'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TaskwardError } from '@taskward/protocol'
import { admitPanelGrant, isTrustedHost } from '../src/panel-access'
import { panelBaseTag } from '../src'
// @ts-expect-error plain ESM script without types
import { checkClientPackage } from '../../../scripts/dsh/pack-client.mjs'

const codeOf = (run: () => void) => {
  try {
    run()
  } catch (error) {
    if (error instanceof TaskwardError) return error.code
    throw error
  }
  return 'GRANTED'
}

describe('the panel\'s login from DSH\'s own page (panel-access)', () => {
  const page = { host: '127.0.0.1:7860', origin: 'http://127.0.0.1:7860', secFetchSite: 'same-origin', trustedHosts: [] }

  it('grants a same-origin browser request to a loopback Host', () => {
    expect(codeOf(() => admitPanelGrant(page))).to.equal('GRANTED')
    expect(codeOf(() => admitPanelGrant({ ...page, host: 'localhost:7860', origin: 'http://localhost:7860' }))).to.equal('GRANTED')
  })

  it('answers an anonymous request (no browser markers) 401', () => {
    expect(codeOf(() => admitPanelGrant({ host: page.host, trustedHosts: [] }))).to.equal('UNAUTHORIZED')
  })

  it('refuses cross-site, foreign Origin, opaque Origin and a foreign Host (DNS rebinding) 403', () => {
    expect(codeOf(() => admitPanelGrant({ ...page, secFetchSite: 'cross-site' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, secFetchSite: 'same-site' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, secFetchSite: undefined, origin: 'http://127.0.0.1:7861' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, secFetchSite: undefined, origin: 'http://evil.example' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, secFetchSite: 'same-origin', origin: undefined }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, origin: 'http://evil.example' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, origin: 'null' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, origin: 'http://127.0.0.1:7861' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, host: 'evil.example', origin: 'http://evil.example' }))).to.equal('FORBIDDEN')
    expect(codeOf(() => admitPanelGrant({ ...page, host: undefined }))).to.equal('FORBIDDEN')
  })

  it('takes a configured trusted host, exactly (with a port) or on any port (without)', () => {
    expect(isTrustedHost('dsh.lan:7860', ['dsh.lan:7860'])).to.equal(true)
    expect(isTrustedHost('dsh.lan:7861', ['dsh.lan:7860'])).to.equal(false)
    expect(isTrustedHost('dsh.lan:9', ['dsh.lan'])).to.equal(true)
    expect(isTrustedHost('dsh.lan.evil.example', ['dsh.lan'])).to.equal(false)
    expect(isTrustedHost('user@127.0.0.1', [])).to.equal(false)
    expect(codeOf(() => admitPanelGrant({ host: 'dsh.lan:7860', origin: 'http://dsh.lan:7860', secFetchSite: 'same-origin', trustedHosts: ['dsh.lan:7860'] }))).to.equal('GRANTED')
    // A plain-http trusted host: Chromium sends no Sec-Fetch-Site there, so the Origin must be the Host.
    expect(codeOf(() => admitPanelGrant({ host: 'dsh.lan:7860', origin: 'http://dsh.lan:7860', trustedHosts: ['dsh.lan:7860'] }))).to.equal('GRANTED')
    expect(codeOf(() => admitPanelGrant({ host: 'dsh.lan:7860', origin: 'http://dsh.lan:3000', trustedHosts: ['dsh.lan'] }))).to.equal('FORBIDDEN')
  })

  it('tells the page where Taskward\'s routes are, once', () => {
    const tag = panelBaseTag('/taskward')
    const html = tag('<html><head><title>x</title></head></html>')
    expect(html).to.equal('<html><head><title>x</title><meta name="taskward-base" content="/taskward"></head></html>')
    expect(tag(html)).to.equal(html)
  })
})

describe('the bundle\'s client declaration (pack:dsh), read as DSH rc.8 reads it', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskward-client-decl-'))
    await writeFile(join(dir, 'client.js'), 'window.__ModuleLoader__.load({id:"taskward-dsh",factory:(require)=>({})});\n')
  })
  after(() => rm(dir, { recursive: true, force: true }))
  const pkg = (client: unknown, exports: unknown = { './client': './client.js' }) => ({ name: 'taskward-dsh', exports, dsh: { client } })

  it('accepts the declaration the pack writes', () => {
    expect(() => checkClientPackage(pkg({ platform: 'web', inject: ['@deepseek-ai/dsh-client-runtime'] }), dir)).to.not.throw()
  })

  it('refuses what would stop DSH\'s web app at start', () => {
    const refusals: [unknown, unknown, RegExp][] = [
      ['web', undefined, /non-object/],
      [{ inject: [] }, undefined, /platform must be a string/],
      [{ platform: 'web', inject: 'x' }, undefined, /inject must be a string array/],
      [{ platform: 'web', external: [1] }, undefined, /external must be a string array/],
      [{ platform: 'web', immediately: 'yes' }, undefined, /immediately must be a boolean/],
      [{ platform: 'web', external: ['taskward-dsh/client'] }, undefined, /must not request itself/],
      [{ platform: 'web' }, {}, /exports no "\.\/client" bundle/],
      [{ platform: 'web' }, { './client': { import: './client.js' } }, /string or an object with a string default/],
      [{ platform: 'web' }, { './client': './missing.js' }, /not in the package/],
    ]
    for (const [client, exports, message] of refusals) {
      expect(() => checkClientPackage(pkg(client, exports ?? { './client': './client.js' }), dir), JSON.stringify(client)).to.throw(message)
    }
  })

  it('refuses a bundle that does not register itself under the package\'s name', async () => {
    await writeFile(join(dir, 'other.js'), 'console.log("not a client module")\n')
    expect(() => checkClientPackage(pkg({ platform: 'web' }, { './client': './other.js' }), dir)).to.throw(/does not register itself/)
    // rc.8's scan does not check this; the message must not say it does.
    expect(() => checkClientPackage(pkg({ platform: 'web' }, { './client': './other.js' }), dir)).to.throw(/pack:dsh's own check/)
      .with.property('message').that.does.not.match(/rc\.8 would refuse/)
  })
})

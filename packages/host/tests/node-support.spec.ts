import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { nodeFinding, NODE_ENGINES } from '@taskward/host'

/*
 * Which Node releases the doctor (npm run doctor, /health?verbose) accepts, and how it says so: 22 and
 * 24 are supported, 20 is end of life (a WARN that says to move), anything older a FAIL.
 */
describe('host: the Node versions the doctor accepts', () => {
  it('accepts the supported LTS lines, 24 and later and 22 from 22.12', () => {
    for (const version of ['24.0.0', '24.22.3', '26.12.1', '22.12.0', '22.23.5']) {
      expect(nodeFinding(version), version).to.deep.equal({ check: 'node', verdict: 'ok', detail: `Node v${version}` })
    }
  })

  it('warns on Node 20 (end of life since April 2026) and says where to move', () => {
    const finding = nodeFinding('20.20.2')
    expect(finding.verdict).to.equal('warn')
    expect(finding.detail).to.match(/^Node v20\.20\.2: end of life since April 2026 .* move to Node 24 \(or 22\)$/)
  })

  it('warns on a release older than its line\'s minimum, and on an odd-numbered line', () => {
    expect(nodeFinding('22.5.1')).to.include({ verdict: 'warn' })
    expect(nodeFinding('22.5.1').detail).to.include('older than 22.12')
    expect(nodeFinding('20.10.0').detail).to.include('older than 20.19')
    for (const version of ['21.7.3', '23.11.1', '25.9.0']) {
      expect(nodeFinding(version), version).to.include({ verdict: 'warn' })
      expect(nodeFinding(version).detail).to.include('odd-numbered')
    }
  })

  it('fails anything older than 20, saying which release to run', () => {
    const finding = nodeFinding('18.20.8')
    expect(finding.verdict).to.equal('fail')
    expect(finding.detail).to.equal(`Node v18.20.8: Taskward needs Node 24 (or 22; ${NODE_ENGINES})`)
  })

  it('says what the root package.json engines says', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'))
    expect(pkg.engines.node).to.equal(NODE_ENGINES)
  })
})

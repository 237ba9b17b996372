import { expect } from 'chai'
import { bootHost, fullSetName } from '../benchmarks/scale-harness'

describe('scale benchmark: SCALE_FULL_WITHOUT', () => {
  const saved = process.env.SCALE_FULL_WITHOUT
  afterEach(() => {
    if (saved === undefined) delete process.env.SCALE_FULL_WITHOUT
    else process.env.SCALE_FULL_WITHOUT = saved
  })

  it('refuses a name that is not a droppable plugin (a typo would measure the whole set under another name)', async () => {
    process.env.SCALE_FULL_WITHOUT = 'recovry'
    const outcome = await bootHost('full', 'http://127.0.0.1:9/v1').then(async (host) => {
      await host.dispose()
      return undefined
    }, (error) => error)
    expect(outcome?.message).to.match(/recovry/)
    expect(outcome?.message).to.match(/workspace, admission, repair, recovery, console/)
  })

  it('names the set it measured: the goals of a run without recovery are not the full set\'s', () => {
    expect(fullSetName('')).to.equal('full set')
    expect(fullSetName('recovery')).to.equal('full set without recovery')
    expect(fullSetName('console,recovery')).to.equal('full set without console, recovery')
    expect(fullSetName('', 'inline')).to.equal('full set, SDK inline')
    expect(fullSetName('recovery', 'worker')).to.equal('full set without recovery')
    expect(() => fullSetName('', 'thread')).to.throw(/SCALE_MODEL_TRANSPORT takes worker \(the default\) or inline, not "thread"/)
  })
})

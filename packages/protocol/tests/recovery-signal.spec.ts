import { expect } from 'chai'
import { combineProgressSignals, progressSignalOf } from '../src'

describe('recovery: progress signal for the supervisor', () => {
  const base = { newPass: [], changedFailure: false, regression: [], candidateChanged: false, progress: false }

  it('describes a new pass as progress and names the checks', () => {
    const signal = progressSignalOf({ ...base, newPass: ['unit', 'lint'], candidateChanged: true, progress: true })
    expect(signal).to.deep.equal({ progress: true, evidence: 'newly passing: unit, lint; the candidate changed' })
  })

  it('describes an unchanged candidate with the same failure as no progress', () => {
    expect(progressSignalOf(base)).to.deep.equal({ progress: false, evidence: 'the candidate is unchanged' })
  })

  it('keeps a regression visible next to a changed failure', () => {
    const signal = progressSignalOf({ ...base, regression: ['unit'], changedFailure: true, candidateChanged: true, progress: true })
    expect(signal.evidence).to.equal('regressed: unit; the failures changed; the candidate changed')
  })

  it('lets any source that shows progress win, else the first that measured anything', () => {
    const none = { progress: false, evidence: 'nothing changed' }
    const some = { progress: true, evidence: 'newly passing: unit' }
    expect(combineProgressSignals([undefined, none, some])).to.equal(some)
    expect(combineProgressSignals([undefined, none])).to.equal(none)
    expect(combineProgressSignals([undefined])).to.equal(undefined)
  })
})

import { expect } from 'chai'
import { combineRounds } from '../benchmarks/scale-flat'

describe('scale benchmark: a flat run of several rounds', () => {
  it('takes the RSS peak of its first round (one task per live session, as at every other size), not the high-water of all rounds', () => {
    // Fewer than 10 sessions repeat their tasks in rounds; a later round's peak also holds what the
    // rounds before it left in the heap. The growth per live session is (peak at N - peak at 1) / (N - 1):
    // a baseline raised by rounds that only the 1-session run has would understate it.
    const combined = combineRounds([
      { wall: 1000, peak: 200 * 2 ** 20, loopDelay: { p99: 12, max: 30 } },
      { wall: 1100, peak: 230 * 2 ** 20, loopDelay: { p99: 15, max: 20 } },
    ])
    expect(combined.peak).to.equal(200 * 2 ** 20)
    expect(combined.wall).to.equal(2100)
    expect(combined.loopDelay).to.deep.equal({ p99: 15, max: 30 })
  })
})

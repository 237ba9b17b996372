import { expect } from 'chai'
import { quantile } from '../src'

describe('protocol: quantile (nearest rank, rounded down)', () => {
  it('reads the sorted values at floor(n·q), the last one at most; NaN for none', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6]
    expect(quantile(values, 0.5)).to.equal(6)
    expect(quantile(values, 0.99)).to.equal(10)
    expect(quantile(values, 0)).to.equal(1)
    expect(quantile(values, 1)).to.equal(10)
    expect(quantile([...Array(200).keys()], 0.99)).to.equal(198)
    expect(quantile([], 0.5)).to.be.NaN
    // The input is not reordered.
    expect(values[0]).to.equal(5)
  })
})

import { expect } from 'chai'
import {
  DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, resolveStampLimits, StampBudget, TaskwardError, validateLimitConfig,
} from '../src'

function thrown(run: () => void): TaskwardError {
  try {
    run()
  } catch (error) {
    expect(error).to.be.instanceOf(TaskwardError)
    return error as TaskwardError
  }
  throw new Error('expected a TaskwardError')
}

describe('workspace stamp limits', () => {
  it('defaults to 10000 entries and 256 MiB', () => {
    const limits = resolveStampLimits()
    expect(limits.entries).to.deep.equal({ value: DEFAULT_MAX_ENTRIES, configKey: 'repairMaxFiles', option: 'maxFiles', source: 'default' })
    expect(limits.bytes).to.deep.equal({ value: DEFAULT_MAX_BYTES, configKey: 'repairMaxBytes', option: 'maxBytes', source: 'default' })
    expect([DEFAULT_MAX_ENTRIES, DEFAULT_MAX_BYTES]).to.deep.equal([10000, 268435456])
  })

  it('lets config override the defaults and a call override config', () => {
    const config = { repairMaxFiles: 20, repairMaxBytes: 300 }
    expect(resolveStampLimits(config).entries).to.include({ value: 20, source: 'config' })
    const limits = resolveStampLimits(config, { maxBytes: 7 })
    expect(limits.entries).to.include({ value: 20, source: 'config' })
    expect(limits.bytes).to.include({ value: 7, source: 'call' })
  })

  it('refuses config values that are not positive safe integers with CONFIG_INVALID', () => {
    for (const value of [0, -1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1, '3', null]) {
      const error = thrown(() => validateLimitConfig({ repairMaxBytes: value as any }))
      expect(error.code).to.equal('CONFIG_INVALID')
      expect(error.details).to.include({ key: 'repairMaxBytes' })
      expect(error.message).to.contain('repairMaxBytes')
    }
    expect(() => validateLimitConfig({ repairMaxFiles: Number.MAX_SAFE_INTEGER, repairMaxBytes: 1 })).to.not.throw()
  })

  it('refuses bad per-call values with BAD_REQUEST naming the option', () => {
    const error = thrown(() => resolveStampLimits({}, { maxFiles: 2.5 }))
    expect(error.code).to.equal('BAD_REQUEST')
    expect(error.details).to.include({ option: 'maxFiles', value: 2.5 })
  })

  describe('StampBudget', () => {
    it('allows exactly the entry limit and refuses the next entry, naming the limit, value and config key', () => {
      const budget = new StampBudget(resolveStampLimits({ repairMaxFiles: 3 }))
      budget.addEntry('a')
      budget.addEntry('b')
      budget.addEntry('c')
      const error = thrown(() => budget.addEntry('d'))
      expect(error.code).to.equal('ARTIFACT_LIMIT')
      expect(error.details).to.deep.equal({ limit: 'entries', value: 3, configKey: 'repairMaxFiles', option: 'maxFiles', source: 'config', path: 'd', reached: 4 })
      expect(error.message).to.contain('repairMaxFiles').and.contain('Nothing is left out')
      expect(budget.entries).to.equal(3)
    })

    it('allows exactly the byte limit and refuses one byte more', () => {
      const budget = new StampBudget(resolveStampLimits({}, { maxBytes: 10 }))
      budget.addFileBytes(4, 'a')
      budget.addFileBytes(6n, 'b')
      budget.addFileBytes(0, 'empty')
      const error = thrown(() => budget.addFileBytes(1, 'c'))
      expect(error.code).to.equal('ARTIFACT_LIMIT')
      expect(error.details).to.include({ limit: 'bytes', value: 10, configKey: 'repairMaxBytes', option: 'maxBytes', source: 'call', path: 'c', reached: 11 })
      expect(budget.bytes).to.equal(10)
    })

    it('handles sizes beyond 2^53 without losing the refusal', () => {
      const budget = new StampBudget(resolveStampLimits())
      const error = thrown(() => budget.addFileBytes(2n ** 60n, 'huge'))
      expect(error.code).to.equal('ARTIFACT_LIMIT')
    })
  })
})

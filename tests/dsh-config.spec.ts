import { expect } from 'chai'
import { TaskwardError } from '@taskward/protocol'
import { Config } from '../adapters/dsh/src/index'

/*
 * The `taskward` row of DSH's patch layers (docs/dsh.md, Config): what a person types there is refused
 * with CONFIG_INVALID naming the key, never silently ignored, and the operator token never echoed.
 */
describe('DSH bundle row config', () => {
  const refused = (input: unknown) => {
    try {
      Config(input as any)
    } catch (error) {
      expect(TaskwardError.is(error, 'CONFIG_INVALID'), String(error)).to.equal(true)
      return error as TaskwardError
    }
    throw new Error('accepted')
  }

  it('refuses an unknown key (a misspelt operatorToken would run on a random token)', () => {
    expect(refused({ operatortoken: 'x'.repeat(43) }).message).to.match(/operatortoken/)
  })

  it('refuses a bad prefix and does not echo a bad operator token', () => {
    expect(refused({ prefix: '/task/ward/' }).message).to.match(/prefix/)
    expect(refused({ operatorToken: ['leaked-secret-value'] }).message).to.not.include('leaked-secret-value')
  })

  it('takes the defaults for an empty row', () => {
    expect(Config({})).to.deep.include({ prefix: '/taskward', operatorToken: '' })
  })
})

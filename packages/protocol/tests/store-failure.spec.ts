import { expect } from 'chai'
import { isStoreUnavailable, storeUnavailable, TaskwardError } from '../src'

/* Which client-library errors mean "the store cannot serve now": read from their fields, never their messages. */
describe('store failures: STORE_UNAVAILABLE from a client error', () => {
  const error = (fields: Record<string, unknown>, message = 'boom') => Object.assign(new Error(message), fields)

  it('recognizes a lost or refused connection, a server that refuses the login, a lock wait, a busy SQLite file', () => {
    for (const fields of [
      { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }, { code: 'ECONNREFUSED', fatal: true }, { code: 'ETIMEDOUT' },
      { code: 'ER_ACCESS_DENIED_ERROR', errno: 1045 }, { code: 'UNKNOWN_CODE_PLEASE_REPORT', errno: 4151 }, { code: 'ER_LOCK_WAIT_TIMEOUT', errno: 1205 },
      { code: 'SQLITE_BUSY' }, { code: 'SQLITE_IOERR_WRITE' }, { fatal: true },
    ]) expect(isStoreUnavailable(error(fields)), JSON.stringify(fields)).to.equal(true)
  })

  it('leaves statement and constraint errors alone, and never reads the message', () => {
    for (const fields of [{ code: 'ER_DUP_ENTRY', errno: 1062 }, { code: 'ER_PARSE_ERROR', errno: 1064 }, { code: 'SQLITE_CONSTRAINT' }, { code: 'SQLITE_CORRUPT' }, {}]) {
      expect(isStoreUnavailable(error(fields, 'connection lost, ECONNREFUSED')), JSON.stringify(fields)).to.equal(false)
    }
    expect(isStoreUnavailable('ECONNREFUSED')).to.equal(false)
    expect(isStoreUnavailable(undefined)).to.equal(false)
  })

  it('turns one into a coded refusal naming the store and the cause; anything else passes through unchanged', () => {
    const coded = storeUnavailable(error({ code: 'UNKNOWN_CODE_PLEASE_REPORT', errno: 4151 }, 'Access denied, this account is locked'), 'MySQL/MariaDB at db:3306') as TaskwardError
    expect(TaskwardError.is(coded, 'STORE_UNAVAILABLE')).to.equal(true)
    expect(coded.details).to.deep.equal({ store: 'MySQL/MariaDB at db:3306', cause: 'errno 4151', said: 'Access denied, this account is locked', outcome: 'not-done' })
    expect(coded.message).to.match(/did not complete; make it again/)
    expect(coded.message).to.match(/MySQL\/MariaDB at db:3306/).and.match(/account is locked/).and.match(/health/)
    const duplicate = error({ code: 'ER_DUP_ENTRY' })
    expect(storeUnavailable(duplicate, 'x')).to.equal(duplicate)
    const refusal = new TaskwardError('LEASE_LOST', 'lost')
    expect(storeUnavailable(refusal, 'x')).to.equal(refusal)
  })

  it('says the outcome is unknown when the connection was lost after the statement may have reached the store', () => {
    for (const fields of [
      { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }, { code: 'ECONNRESET', fatal: true }, { code: 'EPIPE', fatal: true },
      { code: 'ETIMEDOUT' }, { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true }, { code: 'CR_SERVER_LOST', errno: 2013 },
      { code: 'CR_SERVER_GONE_ERROR', errno: 2006 }, { code: 'UNKNOWN_CODE_PLEASE_REPORT', errno: 1927 }, { code: 'SQLITE_IOERR_WRITE' }, { fatal: true },
    ]) {
      const coded = storeUnavailable(error(fields, 'lost'), 'db') as TaskwardError
      expect(TaskwardError.is(coded, 'STORE_UNAVAILABLE'), JSON.stringify(fields)).to.equal(true)
      expect(coded.details?.outcome, JSON.stringify(fields)).to.equal('unknown')
      expect(coded.message, JSON.stringify(fields)).to.not.match(/did not complete/)
      expect(coded.message, JSON.stringify(fields)).to.match(/unknown/).and.match(/before making it again/)
    }
    for (const fields of [
      { code: 'ECONNREFUSED', fatal: true }, { code: 'ER_ACCESS_DENIED_ERROR', errno: 1045 }, { code: 'POOL_CLOSED' },
      { code: 'ER_CON_COUNT_ERROR', errno: 1040 }, { code: 'ER_LOCK_WAIT_TIMEOUT', errno: 1205 }, { code: 'SQLITE_BUSY' }, { code: 'SQLITE_FULL' },
    ]) expect((storeUnavailable(error(fields), 'db') as TaskwardError).details?.outcome, JSON.stringify(fields)).to.equal('not-done')
  })
})

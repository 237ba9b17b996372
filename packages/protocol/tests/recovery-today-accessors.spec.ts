/*
 * The `today` predicates (recovery/today.ts) are documented as non-throwing and as accepting
 * only payloads the schema reads unchanged; the reader (records/reader.ts) asks them about the
 * caller's payload and then returns `structuredClone` of it, a second read. An accessor property
 * (a getter on an object whose prototype is Object.prototype, which `objectOf` takes as plain) is
 * read once by the predicate and again by the clone; the schema path reads it only once (the clone)
 * and validates what it read. Low practical reach (stored events are JSON-parsed), but the contract
 * "never more than the schema accepts" does not hold.
 */
import { expect } from 'chai'
import type { RecordEnvelope } from '../src/envelope'
import { RECOVERY_NAMESPACE, recoveryReader } from '../src/recovery'
import { DIGEST_PATTERN } from '../src/recovery/record-values'
import { RECOVERY_TODAY } from '../src/recovery/today'

function receiptEnvelope(payload: unknown): RecordEnvelope {
  return { namespace: RECOVERY_NAMESPACE, schemaVersion: 1, kind: 'receipt', recordId: 'receipt-1', payload }
}

describe('recovery today predicates and accessor properties', () => {
  it('never hands back a payload its schema refuses (a getter that answers differently on a second read)', () => {
    let reads = 0
    const payload = {
      journalId: 'candidate-1',
      get digest() { return reads++ === 0 ? 'a'.repeat(40) : 'not a digest' },
      at: 6,
    }
    let read: { digest?: unknown } | undefined
    try {
      read = recoveryReader.read(receiptEnvelope(payload), 1).payload
    } catch (error) {
      // Refusing it is fine too; handing back an invalid digest is not.
      expect((error as { code?: string }).code).to.equal('RECORD_UNSUPPORTED')
      return
    }
    expect(read!.digest).to.be.a('string').and.to.match(DIGEST_PATTERN)
  })

  it('does not throw on a payload whose getter throws; the reader refuses it as RECORD_UNSUPPORTED, as the schema path does', () => {
    const payload = { journalId: 'candidate-1', get digest(): string { throw new Error('boom') }, at: 6 }
    expect(() => RECOVERY_TODAY.receipt(payload)).to.not.throw()
    let caught: unknown
    try {
      recoveryReader.read(receiptEnvelope(payload), 1)
    } catch (error) {
      caught = error
    }
    expect((caught as { code?: string } | undefined)?.code).to.equal('RECORD_UNSUPPORTED')
  })
})

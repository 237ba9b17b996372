/*
 * The `today` checks (recovery/today.ts) never throw and accept only payloads the schema reads
 * unchanged. A payload read twice — checked, then copied — could answer differently the second time
 * (a getter on a plain object); so the reader copies first and checks and returns the copy, and a
 * getter that throws sends the payload down the schema path, which refuses it RECORD_UNSUPPORTED.
 * (Stored payloads are JSON-parsed and have no getters; in-memory ones may.)
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

import { expect } from 'chai'
import { foldRecovery, initRecoveryState, RECORD_EVENT_TYPE, RECOVERY_NAMESPACE, type SessionEvent } from '../src'

/*
 * Review-d (f1d5625): `unverified` records were written at schema version 1 by main from 71e464e (the
 * settling stage verification, 985c17d: RECOVERY_SCHEMA_VERSION 1, `unverified: { schemas: { 1: … } }`)
 * until f1d5625 moved the kind to version 2 and dropped its version-1 schema. A session log written
 * by that main still holds them; today's reader admits version 1 (1..2) and then refuses the record
 * ("no schema for version 1"): the recovery projection is poisoned and the session's execution blocked.
 */
describe('review-d: an `unverified` record written at version 1 (main 71e464e..f1d5625^)', () => {
  it('is read, not a poisoned recovery projection', () => {
    const payload = { taskId: 't1', nodeId: 'a', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'kept changing', lostRounds: 2, at: 5 }
    const event: SessionEvent = Object.freeze({
      seq: 0, type: RECORD_EVENT_TYPE, time: 1,
      data: { namespace: RECOVERY_NAMESPACE, schemaVersion: 1, kind: 'unverified', recordId: 't1-u0', payload },
    })
    const state = foldRecovery(initRecoveryState(), event)
    expect(state.poisoned, JSON.stringify(state.poisoned)).to.equal(undefined)
    expect(state.tasks.t1?.unverified).to.deep.include({ code: 'ARTIFACT_CHANGED', lostRounds: 2 })
  })
})

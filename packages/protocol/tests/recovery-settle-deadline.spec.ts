import { expect } from 'chai'
import { nextSettleStep, type SettlePolicy } from '../src'

/*
 * Review of issue 30 point 2 (settle.ts): `deadlineMs` is documented as "time from the first lost
 * round after which it gives up" (docs/recovery.md: "or settle.deadlineMs after the first, it gives
 * up"). `quiet` is tested before the deadline, so past the deadline a quiet reading still starts a
 * new verification round — each one up to CANDIDATE_READS runs of every check under the recovery lock —
 * and the deadline bounds only the waits, not the work (a check of minutes, an agent writing in bursts).
 */
describe('recovery: nextSettleStep past the deadline', () => {
  const policy: SettlePolicy = { quietMs: 100, maxWaitMs: 1000, maxRounds: 5, deadlineMs: 10_000 }
  const where = { workspace: '/w', taskId: 't1' }

  it('gives up once the deadline has passed, also when the last reading was quiet', () => {
    const step = nextSettleStep(policy, { lostRounds: 2, waits: 1, elapsedMs: 60_000, quiet: true }, where)
    expect(step.kind).to.equal('give-up')
  })
})

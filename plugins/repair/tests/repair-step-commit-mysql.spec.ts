import { expect } from 'chai'
import { REPAIR_NAMESPACE } from '@taskward/protocol'
import { TestHost, mysqlTestConfig, removeTree, takeLeaseElsewhere, skipWithoutMysql } from '@taskward/testkit'
import { bindingOf, completeDiamond, mainSession, proposeRepair, records, repairPlugins, workspace } from './fixtures'

/*
 * A Decline click or a user's proposal arrives while the main agent's step is open (its model is
 * answering): the record it appends is committed at once, so a step whose commit is refused
 * (another host took the lease: LEASE_LOST) cannot take it down after the click was answered 200.
 * Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('repair: a click while a step of the main agent is open (MySQL leases)', function () {
  this.timeout(120_000)
  let host: TestHost | undefined
  let cwd: string | undefined

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await host?.dispose()
    if (cwd) await removeTree(cwd)
    host = cwd = undefined
  })

  const completed = async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!), plugins: repairPlugins(), waitFor: ['supervisor', 'repair'] })
    cwd = await workspace()
    const session = await mainSession(host, cwd)
    await completeDiamond(host, session)
    return { host, session }
  }

  for (const action of ['decline', 'propose'] as const) {
    it(`never answers a ${action} whose record went down with a refused step commit as if it were written`, async () => {
      const { host, session } = await completed()
      const proposal = await proposeRepair(host, session, ['b'])
      const before = (await records(session, REPAIR_NAMESPACE)).length
      // The agent's step is open, as while its model answers, and another host takes the lease meanwhile.
      session.openStep()
      await takeLeaseElsewhere(host.ctx, session.id)
      const body = action === 'decline'
        ? { action, ...bindingOf(proposal) }
        : { action, taskId: proposal.taskId, revision: proposal.revision, reason: 'the column sums are wrong too', rootNodeIds: ['c'] }
      const response = await host.http.post(`/api/sessions/${session.id}/repair`, body)
      await session.commitStep().catch(() => {})
      const answer = await response.json() as any
      expect((await records(session, REPAIR_NAMESPACE)).length, 'nothing of the click was written').to.equal(before)
      expect(response.status, `not a 200 for a record that was never written: ${JSON.stringify(answer)}`).to.equal(409)
      expect(answer.code).to.equal('LEASE_LOST')
    })
  }
})

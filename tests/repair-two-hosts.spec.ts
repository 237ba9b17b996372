import { expect } from 'chai'
import { TestHost, removeTree, mysqlTestConfig } from '@taskward/testkit'
import {
  allIdle, completeDiamond, mainSession, proposeRepair, receipts, reopens, repairPlugins, workspace,
} from '../plugins/repair/tests/fixtures'

/*
 * Two hosts sharing one MariaDB store, many Confirm clicks on both at once: exactly one receipt and
 * one reopen, and every losing click answers what docs/repair.md promises — `already-applied` — never
 * `REPAIR_STALE` ("decided meanwhile"); a click that would wake the agent on the host without the
 * session's lease answers `LEASE_HELD` instead. Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL

const mysqlConfig = () => mysqlTestConfig(url!)

describe('repair: two hosts on one MariaDB store', function () {
  this.timeout(120_000)
  const hosts: TestHost[] = []
  let cwd: string | undefined

  before(function () {
    if (url) return
    if (process.env.CI) throw new Error('CI must set TASKWARD_TEST_MYSQL (.ci/run starts MariaDB)')
    this.skip()
  })
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.dispose()))
    if (cwd) await removeTree(cwd)
  })

  const boot = async () => {
    const host = await TestHost.boot({ plugins: repairPlugins(), waitFor: ['supervisor', 'repair'], database: mysqlConfig() })
    hosts.push(host)
    return host
  }

  it('50 clicks on Confirm over both hosts: one reopen, every other click answers already-applied (or LEASE_HELD on the host without the lease)', async () => {
    const [a, b] = [await boot(), await boot()]
    cwd = await workspace()
    const session = await mainSession(a, cwd)
    await completeDiamond(a, session)
    await allIdle(a, session)
    const answer = await proposeRepair(a, session, ['b'])
    const body = { action: 'confirm', proposalId: answer.proposalId, taskId: answer.taskId, revision: answer.revision }

    const clicks = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      const host = i % 2 ? b : a
      const response = await host.http.post(`/api/sessions/${session.id}/repair`, body)
      return { host, status: response.status, body: await response.json() as any }
    }))

    // One driver per session (docs/operations.md): host A holds the main session's lease, so a click
    // on B that would wake the agent there is refused with LEASE_HELD, writing nothing; once the
    // repair is applied, B answers already-applied from the log like A.
    const held = clicks.filter((click) => click.status === 409 && click.body.code === 'LEASE_HELD')
    for (const click of held) expect(click.host).to.equal(b)
    const refused = clicks.filter((click) => click.status !== 200 && !held.includes(click))
    expect(refused.map((click) => `${click.status} ${click.body.code}: ${click.body.error}`)).to.deep.equal([])
    const answered = clicks.filter((click) => click.status === 200)
    const outcomes = answered.map((click) => click.body.outcome)
    expect(outcomes.filter((o) => o === 'reopened')).to.have.length(1)
    expect(outcomes.filter((o) => o === 'already-applied')).to.have.length(answered.length - 1)
    for (const click of answered) {
      expect(click.body).to.include({ taskId: answer.taskId, revision: answer.revision + 1 })
    }
    expect(await receipts(session)).to.have.length(1)
    expect(await reopens(session)).to.have.length(1)
  })
})

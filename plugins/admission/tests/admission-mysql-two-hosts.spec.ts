import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { original, storeDriver } from '@taskward/host'
import { TestHost, mysqlTestConfig, removeTree, skipWithoutMysql, storeQuery, takeLeaseElsewhere, tempWorkspace } from '@taskward/testkit'
import Admission from '../src'
import { TASKS, appendRecord, readerPlugin, tasksReader } from './fixtures'

/*
 * Two hosts on one MySQL/MariaDB store: host A (admission, a task reader of versions 1–10) appended a
 * session's first event, host B (a newer supervisor, say) then appends a v11 task record to it. A sees
 * only its own appends: an index it started at the session's first event would miss B's record and
 * admit the session. On a shared store the first check reads the log as written (found by a stranger
 * review; both tests failed with the index started at seq 0). Runs when TASKWARD_TEST_MYSQL is set.
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('admission: two hosts on one MySQL store', function () {
  this.timeout(60_000)
  let a: TestHost
  let b: TestHost
  let cwd: string

  before(function () { skipWithoutMysql(this) })
  beforeEach(async () => {
    cwd = await tempWorkspace()
    a = await TestHost.boot({ database: mysqlTestConfig(url!), plugins: [[Admission, {}]], waitFor: ['admission'] })
    a.ctx.plugin(readerPlugin(tasksReader(10)))
    b = await TestHost.boot({ database: mysqlTestConfig(url!) })
  })
  afterEach(async () => {
    await a?.dispose()
    await b?.dispose()
    await removeTree(cwd)
  })

  /** A session whose seq 0 A appended, and whose seq 1 is B's v11 record. */
  async function sharedSession() {
    const atA = await a.ctx.sessions.create({ id: `two-hosts-${randomUUID()}`, cwd })
    await atA.append('user/message', { text: '/task new x' })
    await appendRecord(await b.ctx.sessions.get(atA.id), TASKS, 11)
    expect((await atA.read({ from: 0, limit: 10 })).map((event) => event.seq)).to.deep.equal([0, 1])
    return atA
  }

  it('refuses, at A, a session whose first event A appended and that holds B\'s v11 record', async () => {
    const atA = await sharedSession()
    expect(await a.ctx.admission.check(atA)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })

  it('refuses it in the middle of A\'s next step too (the guard\'s check, with A\'s event staged at the seq B took)', async () => {
    const atA = await sharedSession()
    atA.openStep()
    await atA.append('user/message', { text: 'go' })
    expect(await a.ctx.admission.check(atA)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
    await atA.commitStep().catch(() => {})
  })

  /**
   * A drives a session (an agent under a short lease) and has checked it; then A freezes past its
   * lease, B takes it (its token grows) and appends a record of a newer supervisor, and lets it lapse.
   */
  async function drivenElsewhere() {
    await a.dispose()
    a = await TestHost.boot({ database: mysqlTestConfig(url!), host: { agents: { leaseDuration: 1000, leaseRenewInterval: 100 } }, plugins: [[Admission, {}]], waitFor: ['admission'] })
    a.ctx.plugin(readerPlugin(tasksReader(10)))
    const agent = await a.ctx.agents.create({ cwd, model: 'scripted' })
    const id = agent.session.id
    await agent.session.append('user/message', { text: 'hello' })
    expect(await a.ctx.admission.check(agent.session)).to.deep.equal([])
    const leases = (original(a.ctx.agents) as any).leases
    await takeLeaseElsewhere(a.ctx, id, 'host-b')
    await until(() => !leases.holds(id), 'A to notice it lost the lease')
    await appendRecord(await b.ctx.sessions.get(id), TASKS, 11)
    await storeQuery(a.ctx)('UPDATE `taskward_lease` SET `expiresAt` = 0 WHERE `sessionId` = ?', [id])
    return { agent, id, leases }
  }

  it('refuses to resume, at A, a session B wrote a v11 record into while it held the lease (A\'s seq caught up with the store first)', async () => {
    const { agent, id } = await drivenElsewhere()
    // A resumes the session it still has in memory.
    const refusal = await a.ctx.agents.resume(id).then(() => undefined, (error) => error)
    expect(refusal?.code, String(refusal)).to.equal('READER_UNAVAILABLE')
    expect(await a.ctx.admission.check(agent.session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })

  it('creates an agent again, at A, on the log as it stands once it took the lease back; a take whose catch-up failed lets the lease go', async () => {
    const { id, leases } = await drivenElsewhere()
    await a.ctx.agents.release(id)
    const query = storeQuery(a.ctx)
    // The store fails the take's catch-up once: the create is refused and the lease is not kept.
    const pool = storeDriver(a.ctx).pool
    const poolQuery = pool.query
    pool.query = function (this: any, sql: string, ...rest: any[]) {
      if (/max\(`seq`\)/i.test(sql)) {
        pool.query = poolQuery
        const callback = rest.at(-1)
        return callback(Object.assign(new Error('connection lost'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }))
      }
      return poolQuery.call(this, sql, ...rest)
    }
    const failed = await a.ctx.agents.create({ sessionId: id, model: 'scripted' }).then(() => undefined, (error) => error)
    pool.query = poolQuery
    expect(failed, 'the create is refused').to.be.instanceOf(Error)
    expect(leases.holds(id), 'a lease taken on a seq that may be behind is let go').to.equal(false)
    const [row] = await query('SELECT `expiresAt` FROM `taskward_lease` WHERE `sessionId` = ?', [id])
    expect(Number(row.expiresAt)).to.equal(0)
    // Taken again, caught up: the v11 record B wrote is seen.
    const again = await a.ctx.agents.create({ sessionId: id, model: 'scripted' })
    expect(await a.ctx.admission.check(again.session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })
})

async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 300; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`timed out waiting for ${what}`)
}

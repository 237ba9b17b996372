import { expect } from 'chai'
import { Projections, original } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import Admission from '../src'
import { TASKS, appendRecord, readerPlugin, tasksReader } from './fixtures'

/*
 * Review (issue 30, point 4; holds): the record index cache now holds the projections service it was built
 * with (`original(ctx.projections)`, read once). When that service is replaced (its plugin disposed and
 * loaded again), the admission plugin must follow the new one: a check still refuses a record no
 * reader reads, and the cache reads through the service that is loaded, not the disposed one.
 */
describe('admission: the projections service replaced', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    cwd = await tempWorkspace()
    host = await TestHost.boot({ plugins: [[Admission, {}]], waitFor: ['admission'] })
    host.ctx.plugin(readerPlugin(tasksReader(10)))
  })

  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('reads the service that is loaded, and still refuses an unread record', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    await appendRecord(session, TASKS, 10)
    expect(await host.ctx.admission.check(session)).to.deep.equal([])
    const before = original(host.ctx.projections)
    ;(host.ctx as any).registry.get(Projections).dispose()
    host.ctx.plugin(Projections, {})
    const deadline = Date.now() + 5000
    while ((!host.ctx.get('admission') || original(host.ctx.get('projections')) === before) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(original(host.ctx.projections)).to.not.equal(before)
    host.ctx.plugin(readerPlugin(tasksReader(10)))
    await new Promise((r) => setTimeout(r, 50))
    const indexes = (original(host.ctx.admission) as any).indexes
    expect(indexes.projections, 'the cache holds the loaded projections service').to.equal(original(host.ctx.projections))
    await appendRecord(session, TASKS, 11)
    expect(await host.ctx.admission.check(session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })
})

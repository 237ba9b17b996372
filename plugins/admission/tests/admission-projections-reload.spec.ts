import { expect } from 'chai'
import { Projections, original } from '@taskward/host'
import { TASKS, appendRecord, hostWithTasksReader, readerPlugin, tasksReader } from './fixtures'

/*
 * Review (issue 30, point 4; holds): the record index cache now holds the projections service it was built
 * with (`original(ctx.projections)`, read once). When that service is replaced (its plugin disposed and
 * loaded again), the admission plugin must follow the new one: a check still refuses a record no
 * reader reads, and the cache reads through the service that is loaded, not the disposed one.
 */
describe('admission: the projections service replaced', () => {
  const each = hostWithTasksReader()

  it('reads the service that is loaded, and still refuses an unread record', async () => {
    const session = await each.host.ctx.sessions.create({ cwd: each.cwd })
    await appendRecord(session, TASKS, 10)
    expect(await each.host.ctx.admission.check(session)).to.deep.equal([])
    const before = original(each.host.ctx.projections)
    ;(each.host.ctx as any).registry.get(Projections).dispose()
    each.host.ctx.plugin(Projections, {})
    const deadline = Date.now() + 5000
    while ((!each.host.ctx.get('admission') || original(each.host.ctx.get('projections')) === before) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(original(each.host.ctx.projections)).to.not.equal(before)
    each.host.ctx.plugin(readerPlugin(tasksReader(10)))
    await new Promise((r) => setTimeout(r, 50))
    const indexes = (original(each.host.ctx.admission) as any).indexes
    expect(indexes.projections, 'the cache holds the loaded projections service').to.equal(original(each.host.ctx.projections))
    await appendRecord(session, TASKS, 11)
    expect(await each.host.ctx.admission.check(session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })
})

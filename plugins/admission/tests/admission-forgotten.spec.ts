import { expect } from 'chai'
import { original } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import Admission, { RECORD_PAIRS_PROJECTION } from '../src'
import { TASKS, appendRecord, readerPlugin, tasksReader } from './fixtures'

/*
 * The host keeps the folds of at most `projections.cachedSessions` sessions in memory; the admission
 * plugin's live record index of a session is a fold of its projection and must go with it (and the
 * verdict kept on it), or every session ever checked would stay in memory.
 */
describe('admission: the record index of a session the projections forgot', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    cwd = await tempWorkspace()
    host = await TestHost.boot({ host: { projections: { cachedSessions: 2 } }, plugins: [[Admission, {}]], waitFor: ['admission'] })
    host.ctx.plugin(readerPlugin(tasksReader(10)))
  })

  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('is dropped with the projection caches, and the check still answers from the saved cache', async () => {
    const sessions = []
    for (let i = 0; i < 5; i++) {
      const session = await host.ctx.sessions.create({ cwd })
      await appendRecord(session, TASKS, 10)
      await appendRecord(session, TASKS, 11)
      expect(await host.ctx.admission.check(session)).to.have.length(1)
      sessions.push(session)
    }
    await host.ctx.projections.flush()
    const cached = sessions.filter((session) => host.ctx.projections.current(session, RECORD_PAIRS_PROJECTION) !== undefined)
    expect(cached).to.have.length(2)
    const indexes = (original(host.ctx.admission) as any).indexes
    const live = sessions.filter((session) => !(indexes.get(session) instanceof Promise))
    expect(live.map((session) => session.id)).to.have.members(cached.map((session) => session.id))
    // A forgotten session is checked as before: its v11 record has no reader.
    const forgotten = sessions.find((session) => !cached.includes(session))!
    expect(await host.ctx.admission.check(forgotten)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })
})

import { expect } from 'chai'
import { original, type Session } from '@taskward/host'
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
    const sessions: Session[] = []
    for (let i = 0; i < 5; i++) {
      const session = await host.ctx.sessions.create({ cwd })
      await appendRecord(session, TASKS, 10)
      await appendRecord(session, TASKS, 11)
      sessions.push(session)
    }
    // Opened by a later start (not born there): each check reads its index through the projection.
    await host.restart()
    host.ctx.plugin(readerPlugin(tasksReader(10)))
    const reopened: Session[] = []
    for (const { id } of sessions) {
      const session = await host.ctx.sessions.get(id)
      expect(await host.ctx.admission.check(session)).to.have.length(1)
      reopened.push(session)
    }
    await host.ctx.projections.flush()
    const cached = reopened.filter((session) => host.ctx.projections.current(session, RECORD_PAIRS_PROJECTION) !== undefined)
    expect(cached).to.have.length(2)
    const indexes = (original(host.ctx.admission) as any).indexes
    const live = reopened.filter((session) => !(indexes.get(session) instanceof Promise))
    expect(live.map((session) => session.id)).to.have.members(cached.map((session) => session.id))
    // A forgotten session is checked as before: its v11 record has no reader.
    const forgotten = reopened.find((session) => !cached.includes(session))!
    expect(await host.ctx.admission.check(forgotten)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
  })

  it('keeps the indexes of at most `liveSessions` sessions, the least recently checked dropped first; a dropped one is read back', async () => {
    await host.dispose()
    host = await TestHost.boot({ plugins: [[Admission, { liveSessions: 3 }]], waitFor: ['admission'] })
    host.ctx.plugin(readerPlugin(tasksReader(10)))
    const indexes = (original(host.ctx.admission) as any).indexes
    // Looked at without `get`, which would read a dropped index back.
    const live = () => [...indexes.live.keys()] as string[]
    const sessions: Session[] = []
    for (let i = 0; i < 5; i++) {
      const session = await host.ctx.sessions.create({ cwd })
      await appendRecord(session, TASKS, 10)
      await appendRecord(session, TASKS, 11)
      expect(await host.ctx.admission.check(session)).to.have.length(1)
      sessions.push(session)
      // The first one is checked again each time: it stays, the others go in the order they were checked.
      if (i > 0) expect(await host.ctx.admission.check(sessions[0])).to.have.length(1)
    }
    expect(live()).to.have.members([sessions[0].id, sessions[3].id, sessions[4].id])
    // A dropped one's check reads it back (its v11 record still has no reader), dropping the least recent.
    expect(await host.ctx.admission.check(sessions[1])).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
    expect(live()).to.have.members([sessions[0].id, sessions[4].id, sessions[1].id])
  })
})

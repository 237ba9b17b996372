import { expect } from 'chai'
import { original, storeDriver } from '@taskward/host'
import { TASKS, appendRecord, hostWithTasksReader } from './fixtures'

/*
 * A session born in this process is indexed from its first event (no projection read on its first
 * check: at 500 new sessions a minute that read was ~2 % of the host's thread), and a step the store
 * refused leaves nothing of its records in the index.
 */
describe('admission: sessions born here, and refused steps', () => {
  const each = hostWithTasksReader()

  it('checks a new session from the index its appends built, without reading a projection', async () => {
    const projections = original(each.host.ctx.projections)
    const get = projections.get
    let reads = 0
    projections.get = function (this: any, ...args: any[]) {
      reads++
      return (get as any).apply(this, args)
    } as any
    try {
      const session = await each.host.ctx.sessions.create({ cwd: each.cwd })
      await session.append('user/message', { text: 'hello' })
      await appendRecord(session, TASKS, 10)
      expect(await each.host.ctx.admission.check(session)).to.deep.equal([])
      await appendRecord(session, TASKS, 11)
      expect(await each.host.ctx.admission.check(session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 2 }])
      expect(reads, 'answered from the index built as the events were appended').to.equal(0)
    } finally {
      projections.get = get
    }
  })

  it('forgets the records of a step the store refused: the next check reads the log as written', async () => {
    const session = await each.host.ctx.sessions.create({ cwd: each.cwd })
    await session.append('user/message', { text: 'hello' })
    expect(await each.host.ctx.admission.check(session)).to.deep.equal([])
    session.openStep()
    // A record no loaded reader reads, staged (the index follows it at once) ...
    await appendRecord(session, TASKS, 11)
    expect(await each.host.ctx.admission.check(session)).to.have.length(1)
    // ... but another writer takes its seq first (straight on the engine): the step is refused.
    storeDriver(each.host.ctx).db.run('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES (?, 1, \'theirs\', ?, \'{}\')', [session.id, Date.now()])
    await session.commitStep().then(() => expect.fail('the step must be refused'), () => {})
    expect(await each.host.ctx.admission.check(session), 'the refused record is not in the log').to.deep.equal([])
  })
})

import { expect } from 'chai'
import { storeDriver } from '@taskward/host'
import { RECORD_EVENT_TYPE } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import Admission from '../src'
import { TASKS, appendRecord, readerPlugin, tasksReader } from './fixtures'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/*
 * A background persist (a read of the projection) in flight while a step is refused: the rollback drops
 * the live index, and the read must not put back what it got before the rollback (holding the refused
 * record, its lastSeq past the log's end) — else the session is admitted with a record in its log no
 * reader reads. Found by a stranger review (persistEvery 0 failed; 100 is the control).
 */
describe('admission: a step refused while the index is read in the background', () => {
  let host: TestHost
  let cwd: string

  const boot = async (persistEvery: number) => {
    host = await TestHost.boot({ plugins: [[Admission, { persistEvery }]], waitFor: ['admission'] })
    host.ctx.plugin(readerPlugin(tasksReader(10)))
  }

  beforeEach(async () => {
    cwd = await tempWorkspace()
  })

  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  for (const persistEvery of [100, 0]) it(`does not admit a session whose log holds an unread record (another writer took the refused seq), persistEvery ${persistEvery}`, async () => {
    await boot(persistEvery)
    const session = await host.ctx.sessions.create({ cwd })
    await session.append('user/message', { text: 'hello' })
    expect(await host.ctx.admission.check(session)).to.deep.equal([])
    await sleep(100) // the first background persist is done; the host projection follows the session now
    session.openStep()
    // Staged at seq 1: a record the loaded reader reads. Its observation starts a background persist.
    const staged = appendRecord(session, TASKS, 10)
    // Another writer takes seq 1 first, with a record no loaded reader reads; the step is refused.
    const envelope = JSON.stringify({ namespace: TASKS, schemaVersion: 11, kind: 'state', recordId: 'theirs', payload: { id: 't1' } })
    storeDriver(host.ctx).db.run('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES (?, 1, ?, ?, ?)', [session.id, RECORD_EVENT_TYPE, Date.now(), envelope])
    await session.commitStep().then(() => expect.fail('the step must be refused'), () => {})
    await staged.catch(() => {})
    await sleep(100)
    const log = await session.read()
    expect(log.map((event) => event.seq)).to.deep.equal([0, 1])
    expect(log[1].data.schemaVersion).to.equal(11)
    expect(await host.ctx.admission.check(session), 'the v11 record in the log has no reader')
      .to.deep.equal([{ namespace: TASKS, schemaVersion: 11, firstSeq: 1 }])
    // And it stays so as the session goes on (the stale index is advanced by the next appends).
    await session.append('user/message', { text: 'more' })
    expect(await host.ctx.admission.check(session)).to.have.length(1)
  })
})

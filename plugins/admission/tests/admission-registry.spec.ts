import { expect } from 'chai'
import type { Agent } from '@taskward/host'
import type { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import Admission, { RECORD_PAIRS_PROJECTION } from '../src'
import { REPAIR, TASKS, appendRecord, readerPlugin, repairReader, tasksReader } from './fixtures'

describe('admission: the reader registry', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    cwd = await tempWorkspace()
    host = await TestHost.boot({ plugins: [[Admission, { persistEvery: 3 }]], waitFor: ['admission'] })
  })

  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('lists registered readers and withdraws one through its disposer', async () => {
    const v9 = tasksReader(9)
    const withdraw = host.ctx.admission.registerReader(v9)
    host.ctx.admission.registerReader(repairReader)
    expect(host.ctx.admission.readers()).to.deep.equal([v9, repairReader])
    withdraw()
    expect(host.ctx.admission.readers()).to.deep.equal([repairReader])
  })

  it('keeps a reader another plugin still holds when one of two registrants is disposed', async () => {
    const v10 = tasksReader(10)
    const first = host.ctx.plugin(readerPlugin(v10))
    host.ctx.plugin({ ...readerPlugin(v10), name: 'second-registrant' })
    const session = await host.ctx.sessions.create({ cwd })
    await appendRecord(session, TASKS, 10)
    first.dispose()
    expect(await host.ctx.admission.check(session)).to.deep.equal([])
  })

  it('checks by session id and refuses an unknown one', async () => {
    const session = await host.ctx.sessions.create({ id: 'by-id', cwd })
    await appendRecord(session, REPAIR, 1, 'proposal')
    expect(await host.ctx.admission.check('by-id')).to.deep.equal([{ namespace: REPAIR, schemaVersion: 1, firstSeq: 0 }])
    let code: string | undefined
    await host.ctx.admission.check('no-such-session').catch((error) => code = error.code)
    expect(code).to.equal('SESSION_NOT_FOUND')
  })

  it('reports the pairs present whether or not they have readers', async () => {
    host.ctx.admission.registerReader(tasksReader(10))
    const session = await host.ctx.sessions.create({ cwd })
    await appendRecord(session, TASKS, 3)
    await session.append('user/message', { text: 'x' })
    await appendRecord(session, TASKS, 3)
    await appendRecord(session, REPAIR, 1, 'confirm')
    expect(await host.ctx.admission.pairs(session)).to.deep.equal([
      { namespace: TASKS, schemaVersion: 3, firstSeq: 0 },
      { namespace: REPAIR, schemaVersion: 1, firstSeq: 3 },
    ])
  })

  it('reads a record event with the registered readers', async () => {
    host.ctx.admission.registerReader(tasksReader(9))
    const session = await host.ctx.sessions.create({ cwd })
    const old = await appendRecord(session, TASKS, 4)
    const future = await appendRecord(session, TASKS, 10)
    const repair = await appendRecord(session, REPAIR, 1, 'proposal')
    expect(host.ctx.admission.read(old)).to.include({ namespace: TASKS, schemaVersion: 4, seq: 0 })
    expect(() => host.ctx.admission.read(future)).to.throw().with.property('code', 'RECORD_UNSUPPORTED')
    expect(() => host.ctx.admission.read(repair)).to.throw().with.property('code', 'READER_UNAVAILABLE')
  })

  it('writes its database cache in the background as the log advances, without waiting for a check', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    await appendRecord(session, TASKS, 1)
    await host.ctx.admission.check(session)
    const cachedSeq = async () => (await host.ctx.projections.describe(session, RECORD_PAIRS_PROJECTION))?.asOfSeq ?? -1
    // Born here: indexed from its first event, nothing read or written for the check.
    expect(await cachedSeq()).to.equal(-1)
    // persistEvery is 3: the fourth event past the cache (none: seq -1) sends it to the database, and so
    // on; the write folds to where the log stands when it runs (the appends go on meanwhile).
    for (let i = 0; i < 4; i++) await session.append('user/message', { text: `m${i}` })
    await until(async () => await cachedSeq() >= 3, 'the cache to reach seq 3')
    for (let i = 0; i < 4; i++) await session.append('user/message', { text: `n${i}` })
    await until(async () => await cachedSeq() >= 7, 'the cache to reach seq 7')

    // After a restart the first check folds only what came after the cache.
    await session.append('user/message', { text: 'tail' })
    await host.restart()
    const reopened = await host.ctx.sessions.get(session.id)
    expect(await host.ctx.admission.pairs(reopened)).to.deep.equal([{ namespace: TASKS, schemaVersion: 1, firstSeq: 0 }])
    expect(await host.ctx.projections.describe(reopened, RECORD_PAIRS_PROJECTION)).to.deep.equal({ version: 1, asOfSeq: 9 })
  })

  it('memoizes the step answer: synchronous and unchanged until a new pair appears or a reader comes or goes', async () => {
    host.ctx.admission.registerReader(tasksReader(9))
    const session = await host.ctx.sessions.create({ cwd })
    await appendRecord(session, TASKS, 9)
    const agent = await host.ctx.agents.create({ sessionId: session.id, model: 'scripted' })
    expect(await askBeforeStep(agent)).to.equal(undefined)
    expect(askBeforeStep(agent)).to.equal(undefined) // warm: no promise

    await appendRecord(session, TASKS, 9)
    expect(askBeforeStep(agent)).to.equal(undefined)
    await appendRecord(session, TASKS, 10) // a new pair
    const refused = askBeforeStep(agent) as TaskwardError
    expect(refused).to.have.property('code', 'READER_UNAVAILABLE')
    expect(refused.message).to.contain(`${TASKS} v10`)

    const fork = host.ctx.plugin(readerPlugin(tasksReader(10))) // a reader comes
    expect(askBeforeStep(agent)).to.equal(undefined)
    fork.dispose() // and goes
    expect(askBeforeStep(agent)).to.have.property('code', 'READER_UNAVAILABLE')
    expect(await host.ctx.admission.check(session)).to.deep.equal([{ namespace: TASKS, schemaVersion: 10, firstSeq: 2 }])
  })
})

/** What a turn asks before each step (the agent's own path). */
function askBeforeStep(agent: Agent): unknown {
  return (agent as unknown as { refusal(): unknown }).refusal()
}

/** Wait (bounded) for something the plugin does in the background. */
async function until(check: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`timed out waiting for ${what}`)
}


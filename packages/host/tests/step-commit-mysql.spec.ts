import { expect } from 'chai'
import { tmpdir } from 'node:os'
import type { Context } from 'cordis'
import { TestHost, mysqlTestConfig, storeQuery, takeLeaseElsewhere, skipWithoutMysql } from '@taskward/testkit'

/*
 * A step's events are one fenced INSERT on MySQL/MariaDB: the batch carries the lease token the
 * session held when the step began, so a host that lost the lease during a step writes none of it.
 * Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('host: a step commit on MySQL carries the lease token', function () {
  this.timeout(60_000)
  let host: TestHost

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await host?.dispose()
  })

  const query = (sql: string, values: unknown[]) => storeQuery(host.ctx)(sql, values)

  it('writes a whole step, and nothing of a step during which another host took the lease (LEASE_LOST)', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    // A projection that counts events: it follows the step's staged events as they are appended.
    host.ctx.plugin({
      name: 'test-count-projection', inject: ['projections'],
      apply: (ctx: Context) => { ctx.projections.register({ key: 'test-count', version: 1, init: () => 0, apply: (count: number) => count + 1 }) },
    })
    let steal = false
    host.ctx.tools.register({
      name: 'note',
      description: 'Append a record; in the second step, another host takes the lease meanwhile.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        await session.append('test/record', { steal })
        await host.ctx.projections.get(session, 'test-count')
        if (steal) await takeLeaseElsewhere(host.ctx, session.id)
        return { ok: true }
      },
    })
    const step = { usage: { promptTokens: 10, completionTokens: 1 }, toolCalls: [{ name: 'note' }] }
    host.scripted.script('main', [step, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    expect(agent.session.fence, 'a main session on MySQL drives under a lease').to.not.equal(undefined)
    agent.followup('first')
    await agent.whenIdle()
    const first = await agent.session.read({ from: 0, limit: 100 })
    expect(first.map((e) => e.type)).to.deep.equal(['user/message', 'model/usage', 'tool/call', 'test/record', 'tool/result'])

    steal = true
    host.scripted.script('main', [step, {}])
    const ended = new Promise<any>((resolve) => host.ctx.on('agent/turn-end', (_agent, summary) => resolve(summary)))
    agent.followup('second')
    const summary = await ended
    expect(summary.error?.code).to.equal('LEASE_LOST')
    const rows = await query('SELECT `seq`, `type` FROM `taskward_event` WHERE `sessionId` = ? ORDER BY `seq`', [agent.session.id])
    // The second turn's message went with its first step: of that turn, nothing was written.
    expect(rows.map((row: any) => row.type)).to.deep.equal(first.map((e) => e.type))
    expect(agent.session.seq, 'the step\'s seqs are free again').to.equal(rows.length)
    // The cache that folded the refused step is never saved, and the state is the log's again.
    await host.ctx.projections.flush()
    const [cache] = await query('SELECT `asOfSeq` FROM `taskward_projection` WHERE `sessionId` = ? AND `key` = ?', [agent.session.id, 'test-count'])
    expect(Number(cache.asOfSeq)).to.be.lessThan(rows.length)
    expect(await host.ctx.projections.get(agent.session, 'test-count')).to.equal(rows.length)
  })

  it('never answers an operator command of a step whose commit was refused as if it were written', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    let entered!: () => void
    const inTool = new Promise<void>((resolve) => entered = resolve)
    let release!: () => void
    const released = new Promise<void>((resolve) => release = resolve)
    host.ctx.tools.register({
      name: 'hold',
      description: 'Another host takes the lease, then wait until the test lets go.',
      async execute(_args: any, { session }) {
        await takeLeaseElsewhere(host.ctx, session.id)
        entered()
        await released
        return { ok: true }
      },
    })
    host.ctx.commands.register('ping', () => 'pong')
    host.scripted.script('main', [{ toolCalls: [{ name: 'hold' }] }, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    agent.followup('go')
    await inTool
    // The operator's command lands in the middle of the step, on a session this host no longer holds.
    const response = await host.http.post(`/api/sessions/${agent.session.id}/input`, { text: '/ping' })
    const rows = await query('SELECT `type` FROM `taskward_event` WHERE `sessionId` = ? ORDER BY `seq`', [agent.session.id])
    release()
    await agent.whenIdle()
    // Nothing of it could be written (the lease is gone): the operator is told so, never a 200 for nothing.
    expect(rows.map((row: any) => row.type)).to.not.include('command/reply')
    expect(response.status).to.equal(409)
    expect((await response.json() as any).code).to.equal('LEASE_LOST')
  })

  it('never answers an operator\'s cancel of a step whose commit was refused as if its record were written', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    let entered!: () => void
    const inTool = new Promise<void>((resolve) => entered = resolve)
    host.ctx.tools.register({
      name: 'hold',
      description: 'Another host takes the lease, then wait until the turn is cancelled.',
      async execute(_args: any, { session, signal }: any) {
        await takeLeaseElsewhere(host.ctx, session.id)
        entered()
        await new Promise<void>((resolve) => signal?.aborted ? resolve() : signal?.addEventListener('abort', () => resolve(), { once: true }))
        return { ok: true }
      },
    })
    host.scripted.script('main', [{ toolCalls: [{ name: 'hold' }] }, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    agent.followup('go')
    await inTool
    const response = await host.http.post(`/api/sessions/${agent.session.id}/cancel`, {})
    await agent.whenIdle()
    const rows = await query('SELECT `type` FROM `taskward_event` WHERE `sessionId` = ? ORDER BY `seq`', [agent.session.id])
    expect(rows.map((row: any) => row.type)).to.not.include('agent/cancelled')
    expect(response.status, 'not a 200 for a record that was never written').to.equal(409)
    const body = await response.json() as any
    expect(body.code).to.equal('LEASE_LOST')
    // The turn did stop: the answer says so, rather than "nothing was written" alone.
    expect(body.error).to.match(/stopped its turn/)
    expect(body.details).to.include({ stopped: true, dropped: 0 })
    expect(agent.state).to.equal('idle')
  })

  it('forgets caches that folded a refused step: once the log grows back past them, they are not taken for current', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    host.ctx.plugin({
      name: 'test-types-projection', inject: ['projections'],
      apply: (ctx: Context) => { ctx.projections.register({ key: 'test-types', version: 1, init: () => [], apply: (types: string[], event) => [...types, event.type] }) },
    })
    let steal = false
    let lease!: Awaited<ReturnType<typeof takeLeaseElsewhere>>
    host.ctx.tools.register({
      name: 'note',
      description: 'Append a record and read the projection; in the second step, another host takes the lease meanwhile.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        await session.append('test/record', {})
        await host.ctx.projections.get(session, 'test-types')
        if (steal) {
          lease = await takeLeaseElsewhere(host.ctx, session.id)
        }
        return { ok: true }
      },
    })
    const step = { toolCalls: [{ name: 'note' }] }
    host.scripted.script('main', [step, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    agent.followup('first')
    await agent.whenIdle()
    steal = true
    host.scripted.script('main', [step, {}])
    const ended = new Promise<any>((resolve) => host.ctx.on('agent/turn-end', (_agent, summary) => resolve(summary)))
    agent.followup('second')
    expect((await ended).error?.code).to.equal('LEASE_LOST')
    const refusedAt = agent.session.seq
    // The lease comes back (as if the other host let go), and the log grows past where the refused step ended.
    await lease.giveBack()
    for (let i = 0; i < 5; i++) await agent.session.append('test/other', { i })
    const log = (await agent.session.read({ from: 0, limit: 100 })).map((e) => e.type)
    expect(log.slice(refusedAt)).to.deep.equal(['test/other', 'test/other', 'test/other', 'test/other', 'test/other'])
    const current = host.ctx.projections.current(agent.session, 'test-types')
    if (current !== undefined) expect(current).to.deep.equal(log)
    expect(await host.ctx.projections.get(agent.session, 'test-types')).to.deep.equal(log)
  })

  it('never saves a cache folded past events staged while the batched save ran: a refused batch leaves no wrong cache behind', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    host.ctx.plugin({
      name: 'test-types-projection', inject: ['projections'],
      apply: (ctx: Context) => { ctx.projections.register({ key: 'test-types', version: 1, init: () => [], apply: (types: string[], event) => [...types, event.type] }) },
    })
    const session = await host.ctx.sessions.create({ cwd: tmpdir() })
    await session.append('a', {})
    expect(await host.ctx.projections.get(session, 'test-types')).to.deep.equal(['a'])
    session.openStep()
    await session.append('b', {})
    // The batched save starts: it writes 'b' (staged) first, then the caches…
    const saving = host.ctx.projections.flush()
    // …while the step goes on: 'c' is staged after that write took 'b', and the cache follows it.
    await session.append('c', {})
    // Another writer takes c's seq: the step's commit will be refused.
    await query('INSERT INTO `taskward_event` (`sessionId`, `seq`, `type`, `time`, `data`) VALUES (?, ?, ?, ?, ?)', [session.id, 2, 'x', Date.now(), '{}'])
    await saving
    const refusal = await session.commitStep().then(() => undefined, (error) => error)
    expect(refusal?.code).to.equal('SEQ_CONFLICT')
    const log = (await session.read({ from: 0, limit: 100 })).map((e) => e.type)
    expect(log).to.deep.equal(['a', 'b', 'x'])
    const [cache] = await query('SELECT `asOfSeq` FROM `taskward_projection` WHERE `sessionId` = ? AND `key` = ?', [session.id, 'test-types'])
    expect(Number(cache.asOfSeq), 'no saved cache stands on the refused c').to.be.lessThan(2)
    expect(await host.ctx.projections.get(session, 'test-types')).to.deep.equal(log)
  })

  it('a fold that reads some types never skips past events whose step was refused while it read', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    host.ctx.plugin({
      name: 'test-kept-projection', inject: ['projections'],
      apply: (ctx: Context) => {
        ctx.projections.register({ key: 'test-kept', version: 1, types: ['keep'], init: () => [], apply: (seqs: number[], event) => [...seqs, event.seq] })
      },
    })
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    const session = agent.session
    await session.append('keep', {})
    session.openStep()
    await session.append('other', {})
    // Another host takes the lease: the step's batch will be refused when the read below writes it.
    const lease = await takeLeaseElsewhere(host.ctx, session.id)
    const end = session.seq - 1
    expect(await host.ctx.projections.get(session, 'test-kept')).to.deep.equal([end - 1])
    expect(await session.commitStep().then(() => undefined, (error) => error?.code)).to.equal('LEASE_LOST')
    expect(session.seq, 'the refused seq is free again').to.equal(end)
    // The lease comes back and the log grows back over the refused seq, with an event the fold reads.
    await lease.giveBack()
    await session.append('keep', {})
    const kept = (await session.read({ from: 0, limit: 100 })).filter((e) => e.type === 'keep').map((e) => e.seq)
    expect(kept).to.deep.equal([end - 1, end])
    expect(await host.ctx.projections.get(session, 'test-kept')).to.deep.equal(kept)
  })
})

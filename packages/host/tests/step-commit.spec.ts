import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { storeDriver } from '@taskward/host'
import { TestHost } from '@taskward/testkit'
import { registerHoldingTool } from './gates'

describe('host: a model step is one commit', () => {
  let host: TestHost
  beforeEach(async () => { host = await TestHost.boot() })
  afterEach(async () => { await host.dispose() })

  const stored = async (sessionId: string) => (await host.ctx.database.get('taskward_event', { sessionId }))
    .sort((a, b) => a.seq - b.seq).map((row) => row.type)

  it('writes a step\'s events (the turn\'s message, usage, calls, records, results) in one commit, which readers of the process see before it', async () => {
    host.ctx.tools.register({
      name: 'note',
      description: 'Append a record and read the log back.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        await session.append('test/record', {})
        // Staged, not yet written: the process reads it all the same.
        return { seen: (await session.read({ from: 0, limit: 100 })).map((e) => e.type) }
      },
    })
    host.scripted.script('main', [{ usage: { promptTokens: 5, completionTokens: 1 }, toolCalls: [{ name: 'note' }, { name: 'note' }] }, { text: 'done' }])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    const before = (storeDriver(host.ctx) as any).writeStats()
    agent.followup('go')
    await agent.whenIdle()
    const after = (storeDriver(host.ctx) as any).writeStats()
    expect(await stored(agent.session.id)).to.deep.equal([
      'user/message', 'model/usage', 'tool/call', 'test/record', 'tool/result', 'tool/call', 'test/record', 'tool/result', 'assistant/message',
    ])
    // Two model steps, two commits; their flushes run behind the turn (one may cover both).
    expect(after.commits - before.commits).to.equal(2)
    await agent.session.durable()
    const flushes = (storeDriver(host.ctx) as any).writeStats().flushes - before.flushes
    expect(flushes).to.be.within(1, 2)
    const results = (await agent.session.read({ from: 0, limit: 100, types: ['tool/result'] })).map((e) => e.data.result.seen)
    expect(results[0]).to.deep.equal(['user/message', 'model/usage', 'tool/call', 'test/record'])
  })

  it('runs a turn to its end while the disk has flushed none of it: a step waits for its write, a tool with effects for the flush', async () => {
    const driver = storeDriver(host.ctx) as any
    let effectRan = false
    host.ctx.tools.register({ name: 'effect', description: 'Changes something outside the log.', execute: async () => { effectRan = true; return { ok: true } } })
    const step = { usage: { promptTokens: 5, completionTokens: 1 }, toolCalls: [{ name: 'glob', args: { pattern: '*.none' } }] }
    host.scripted.script('main', [step, step, step, { text: 'done' }, { toolCalls: [{ name: 'effect' }] }, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    // A disk slow to flush: every wait for durability holds until released.
    const flusher = driver.flusher
    const durable = flusher.durable.bind(flusher)
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    flusher.durable = () => held.then(durable)
    try {
      const start = driver.writeStats()
      agent.followup('go')
      await agent.whenIdle()
      // Four steps, four commits in the database, none flushed yet; the model was asked four times.
      expect(driver.writeStats().commits - start.commits).to.equal(4)
      expect(driver.writeStats().flushes - start.flushes).to.equal(0)
      expect((await stored(agent.session.id)).filter((type) => type === 'model/usage')).to.have.length(3)
      let madeDurable = false
      const durableNow = agent.session.durable().then(() => { madeDurable = true })
      // The next turn's tool with an effect outside the log waits for the flush.
      agent.followup('now change something')
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(madeDurable, 'durable() waits for the held flush').to.equal(false)
      expect(effectRan, 'an effect never comes before its record is durable').to.equal(false)
      release()
      await durableNow
      await agent.whenIdle()
      expect(effectRan).to.equal(true)
      expect(driver.writeStats().flushes - start.flushes).to.be.at.least(1)
    } finally {
      release()
      flusher.durable = durable
    }
  })

  it('runs a tool with effects outside the log only once its tool/call is durable; read-only and record-only tools stay in the step\'s commit', async () => {
    const driver = storeDriver(host.ctx) as any
    const seen: Record<string, { stored: string[], flushes: number }> = {}
    const look = (name: string) => async (_args: any, { session }: any) => {
      seen[name] = { stored: await stored(session.id), flushes: driver.writeStats().flushes }
      return { ok: true }
    }
    host.ctx.tools.register({ name: 'effect', description: 'Changes something outside the log.', execute: look('effect') })
    host.ctx.tools.register({ name: 'looks', description: 'Changes nothing.', readOnly: true, execute: look('looks') })
    host.ctx.tools.register({ name: 'records', description: 'Appends a record only.', recordsOnly: true, execute: look('records') })
    host.scripted.script('main', [{ toolCalls: [{ name: 'looks' }, { name: 'records' }, { name: 'effect' }] }, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    const start = driver.writeStats().flushes
    agent.followup('go')
    await agent.whenIdle()
    expect(seen.looks.stored, 'a read-only tool runs with the step staged').to.deep.equal([])
    expect(seen.records.stored, 'so does a record-only one').to.deep.equal([])
    // The file write, the shell command: its record (and the step before it) is on disk first.
    expect(seen.effect.stored).to.deep.equal(['user/message', 'tool/call', 'tool/result', 'tool/call', 'tool/result', 'tool/call'])
    expect(seen.effect.flushes - start).to.equal(1)
    expect(await stored(agent.session.id)).to.deep.equal((await agent.session.read({ from: 0, limit: 100 })).map((e) => e.type))
  })

  it('acknowledges an operator command that came during a step only once it is written', async () => {
    const { entered, release: held } = registerHoldingTool(host, 'hold', { ok: true })
    host.ctx.commands.register('ping', () => 'pong')
    host.scripted.script('main', [{ toolCalls: [{ name: 'hold' }] }, {}])
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    agent.followup('go')
    await entered.opened
    const response = await host.http.post(`/api/sessions/${agent.session.id}/input`, { text: '/ping' })
    expect(response.status).to.equal(200)
    // The step is still open (its tool call waits), and the command's reply is in the database.
    expect(await stored(agent.session.id)).to.include('command/reply')
    held.open()
    await agent.whenIdle()
    const types = await stored(agent.session.id)
    expect(types).to.deep.equal((await agent.session.read({ from: 0, limit: 100 })).map((e) => e.type))
    expect(types.filter((type) => type === 'tool/result')).to.have.length(1)
  })
})

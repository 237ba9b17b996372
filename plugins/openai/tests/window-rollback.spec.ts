import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { TestHost, mysqlTestConfig, takeLeaseElsewhere, skipWithoutMysql } from '@taskward/testkit'
import { EventWindows } from '../src/window'

/*
 * A window that followed a step's staged events forgets them when the step is refused (LEASE_LOST on
 * MySQL): once the log grows back past where the refused step ended, the window must be the log's, not
 * the refused events the model would otherwise be shown. Runs when TASKWARD_TEST_MYSQL is set.
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('event window: a refused step', function () {
  this.timeout(60_000)
  let host: TestHost

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await host?.dispose()
  })

  it('is read again from the log once the step that it followed was refused', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    const windows = new EventWindows(host.ctx, 100, 1000, 1000)
    let steal = false
    let lease!: Awaited<ReturnType<typeof takeLeaseElsewhere>>
    host.ctx.tools.register({
      name: 'note',
      description: 'Append a record and read the window; in the second step, another host takes the lease meanwhile.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        await session.append('test/record', {})
        await windows.latest(session)
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
    // The lease comes back (as if the other host let go), and the log grows past where the refused step ended.
    await lease.giveBack()
    for (let i = 0; i < 5; i++) await agent.session.append('test/other', { i })
    const log = (await agent.session.read({ from: 0, limit: 100 })).map((e) => `${e.seq} ${e.type}`)
    const { events } = await windows.latest(agent.session)
    expect(events.map((e) => `${e.seq} ${e.type}`)).to.deep.equal(log)
  })
})

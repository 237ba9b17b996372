import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { TestHost, mysqlTestConfig, takeLeaseElsewhere, skipWithoutMysql } from '@taskward/testkit'
import { registerTokenBudget } from '../src/budget'

/*
 * The token budget's running count follows a step's staged `model/usage` as it is appended; when the
 * step is refused (LEASE_LOST on MySQL) those tokens are not in the log, and once the log grows back
 * past them the count must be the log's again — the budget is a fold of the log, as after a restart.
 * Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('token budget: a refused step', function () {
  this.timeout(60_000)
  let host: TestHost

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await host?.dispose()
  })

  it('does not count the usage of a step whose commit was refused, once the log grew back past it', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!), plugins: [[SupervisorPlugin, {}]], waitFor: ['supervisor'] })
    registerTokenBudget(host.ctx, 100)
    let lease!: Awaited<ReturnType<typeof takeLeaseElsewhere>>
    host.ctx.tools.register({
      name: 'steal',
      description: 'Another host takes the lease during this step.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        lease = await takeLeaseElsewhere(host.ctx, session.id)
        return { ok: true }
      },
    })
    host.ctx.tools.register({ name: 'noop', description: 'Nothing.', readOnly: true, execute: async () => ({ ok: true }) })
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    expect((await host.ctx.commands.input(agent.session, '/task new the objective'))?.error).to.equal(undefined)
    const turnEnd = () => new Promise<any>((resolve) => host.ctx.once('agent/turn-end', (_agent, summary) => resolve(summary)))

    // A step of 60 tokens whose commit is refused: none of it is in the log.
    host.scripted.script('main', [{ usage: { promptTokens: 50, completionTokens: 10 }, toolCalls: [{ name: 'steal' }] }, {}])
    let ended = turnEnd()
    agent.followup('go')
    expect((await ended).error?.code).to.equal('LEASE_LOST')
    await lease.giveBack()
    const refusedEnd = agent.session.seq + 3
    while (agent.session.seq < refusedEnd) await agent.session.append('test/other', {})
    expect((await agent.session.read({ from: 0, limit: 100 })).filter((e) => e.type === 'model/usage')).to.have.length(0)

    // 60 tokens the log holds: with the refused 60 counted too, the second step would be refused.
    host.scripted.script('main', [{ usage: { promptTokens: 50, completionTokens: 10 }, toolCalls: [{ name: 'noop' }] }, { usage: { promptTokens: 5, completionTokens: 1 }, text: 'two' }])
    ended = turnEnd()
    agent.followup('again')
    const summary = await ended
    expect(summary.error?.code, JSON.stringify(summary.error)).to.equal(undefined)
    const log = await agent.session.read({ from: 0, limit: 100 })
    expect(log.filter((e) => e.type === 'agent/refused')).to.have.length(0)
    expect(log.filter((e) => e.type === 'model/usage').map((e) => e.data.promptTokens)).to.deep.equal([50, 5])
  })
})

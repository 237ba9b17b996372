import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { TestHost, mysqlTestConfig, takeLeaseElsewhere, skipWithoutMysql } from '@taskward/testkit'
import { SupervisorPlugin } from '../src'

/*
 * The supervisor's in-memory state follows a step's staged records; when the step is refused
 * (LEASE_LOST on MySQL), it must forget them: once the log grows back past where the refused step
 * ended, the state is the log's, not a transition that was never written. Runs when
 * TASKWARD_TEST_MYSQL is set.
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('supervisor: a refused step', function () {
  this.timeout(60_000)
  let host: TestHost

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await host?.dispose()
  })

  it('leaves no transition of a refused step in the state, once the log grows back past it', async () => {
    host = await TestHost.boot({ database: mysqlTestConfig(url!), plugins: [[SupervisorPlugin, {}]], waitFor: ['supervisor'] })
    let lease!: Awaited<ReturnType<typeof takeLeaseElsewhere>>
    let stagedEnd = 0
    host.ctx.tools.register({
      name: 'retitle',
      description: 'A transition in the middle of a step, during which another host takes the lease.',
      recordsOnly: true,
      async execute(_args: any, { session }) {
        await host.ctx.supervisor.apply(session, (task) => ({ ...task!, revision: task!.revision + 1, objective: 'never written' }))
        expect((await host.ctx.supervisor.state(session)).current?.objective).to.equal('never written')
        stagedEnd = session.seq
        lease = await takeLeaseElsewhere(host.ctx, session.id)
        return { ok: true }
      },
    })
    const agent = await host.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    const created = await host.ctx.commands.input(agent.session, '/task new the objective')
    expect(created?.error).to.equal(undefined)
    host.scripted.script('main', [{ toolCalls: [{ name: 'retitle' }] }, {}])
    const ended = new Promise<any>((resolve) => host.ctx.on('agent/turn-end', (_agent, summary) => resolve(summary)))
    agent.followup('go')
    expect((await ended).error?.code).to.equal('LEASE_LOST')
    // The refused step ended with its tool/result, after the transition.
    const refusedEnd = stagedEnd + 1
    // The lease comes back (as if the other host let go), and the log grows past where the refused step ended.
    await lease.giveBack()
    while (agent.session.seq < refusedEnd) await agent.session.append('test/other', {})
    const log = await agent.session.read({ from: 0, limit: 100 })
    expect(log.map((e) => e.data?.payload?.objective).filter(Boolean)).to.not.include('never written')
    expect((await host.ctx.supervisor.state(agent.session)).current?.objective).to.equal('the objective')
    expect(host.ctx.supervisor.currentState(agent.session)?.current?.objective ?? 'the objective').to.equal('the objective')
  })
})

import { expect } from 'chai'
import { tmpdir } from 'node:os'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, mysqlTestConfig, skipWithoutMysql } from '@taskward/testkit'

/*
 * Two hosts on one MySQL/MariaDB store: a slash command at the host that does not drive a main
 * session is refused before anything is recorded (it would race the driving host's turn); once the
 * driving host let the lease go, it runs. Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL

describe('host: a host that does not drive the session (MySQL leases)', function () {
  this.timeout(60_000)
  const hosts: TestHost[] = []

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.dispose()))
  })

  const boot = async () => {
    const host = await TestHost.boot({ database: mysqlTestConfig(url!) })
    hosts.push(host)
    let runs = 0
    host.ctx.commands.register('probe', () => ({ runs: ++runs }))
    return host
  }

  it('is refused LEASE_HELD naming the driving host, writing nothing; runs there, and here once that host released the lease; GET /api/sessions/:id there shows the log\'s seq', async () => {
    const [a, b] = [await boot(), await boot()]
    const agent = await a.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    const id = agent.session.id
    expect((await a.ctx.commands.input(agent.session, '/probe'))?.reply).to.deep.equal({ runs: 1 })

    const atB = await b.ctx.sessions.get(id)
    const before = (await atB.read({ from: 0 })).length
    let refusal: unknown
    try {
      await b.ctx.commands.input(atB, '/probe')
    } catch (error) {
      refusal = error
    }
    expect(TaskwardError.is(refusal, 'LEASE_HELD'), String(refusal)).to.equal(true)
    expect((refusal as TaskwardError).message).to.include('send the command there')
    expect((refusal as TaskwardError).details).to.include({ sessionId: id })
    expect(String((refusal as TaskwardError).details?.holder)).to.match(/started/)
    const fresh = await (await TestHost.boot({ database: mysqlTestConfig(url!) }).then((host) => { hosts.push(host); return host })).ctx.sessions.get(id)
    expect((await fresh.read({ from: 0 })).length, 'nothing recorded for the refused command').to.equal(before)

    // B shows the session as the log holds it, A's appends since B loaded it included.
    expect((await a.ctx.commands.input(agent.session, '/probe'))?.reply).to.deep.equal({ runs: 2 })
    const shown = await fetch(`${b.url}/api/sessions/${id}`, { headers: { authorization: `Bearer ${b.operatorToken}` } })
    expect(((await shown.json()) as any).session.seq).to.equal(agent.session.seq)

    // A stops driving the session (its agent ends, the lease is released): B may write to it.
    await hosts.splice(0, 1)[0].dispose()
    expect((await b.ctx.commands.input(atB, '/probe'))?.reply).to.deep.equal({ runs: 1 })
  })

  it('a resume there is refused LEASE_HELD before any agent/before-resume listener runs (they may write: recovery reconciles its journal), also on the way to a command over HTTP', async () => {
    const [a, b] = [await boot(), await boot()]
    const agent = await a.ctx.agents.create({ cwd: tmpdir(), model: 'scripted' })
    const id = agent.session.id
    let asked = 0
    // A listener that records, as recovery's reconcile and STOP replay may: at B it would race A's turn.
    b.ctx.on('agent/before-resume', async (session) => {
      asked++
      await session.append('test/before-resume', {})
    })
    const before = (await agent.session.read({ from: 0 })).length

    const refusal = await b.ctx.agents.resume(id).catch((error) => error)
    expect(TaskwardError.is(refusal, 'LEASE_HELD'), String(refusal)).to.equal(true)
    const response = await b.http.post(`/api/sessions/${id}/input`, { text: '/probe' })
    expect(response.status).to.equal(409)
    expect((await response.json() as any).code).to.equal('LEASE_HELD')
    // Chat over HTTP is refused the same way: its agent would have to be resumed there first.
    const chat = await b.http.post(`/api/sessions/${id}/input`, { text: 'hello' })
    expect(chat.status).to.equal(409)
    expect((await chat.json() as any).code).to.equal('LEASE_HELD')
    expect(asked, 'no before-resume listener ran at the host that does not drive the session').to.equal(0)
    expect((await agent.session.read({ from: 0 })).length, 'nothing recorded').to.equal(before)

    // Once A let the lease go, B resumes and its listeners decide as usual.
    await hosts.splice(0, 1)[0].dispose()
    await b.ctx.agents.resume(id)
    expect(asked).to.equal(1)
  })
})

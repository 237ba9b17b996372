import { expect } from 'chai'
import { fileURLToPath } from 'node:url'
import { randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { TestHost, mysqlTestConfig, storeQuery, skipWithoutMysql } from '@taskward/testkit'
import { HostProcess, type Answer } from './host-process'

/*
 * Several hosts on one MariaDB store, one driver per session: two real host processes contend for a
 * main session's lease — the second's resume refuses naming the holder; a holder frozen with SIGSTOP
 * past its lease loses it, the other host takes it, and the frozen one, thawed, cannot append.
 * Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL
const CHILD = fileURLToPath(new URL('./lease-host.child.ts', import.meta.url))
const codeOf = (value: unknown) => (value as { code?: string } | undefined)?.code
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A host process answering one line per command (tests/lease-host.child.ts). */
const hostProcess = (leaseDuration: number, renewInterval: number) => new HostProcess(CHILD, [String(leaseDuration), String(renewInterval)])

const mysqlConfig = () => mysqlTestConfig(url!)

describe('leases: two host processes on one MariaDB store', function () {
  this.timeout(180_000)
  const processes: HostProcess[] = []
  let reader: TestHost | undefined

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((host) => host.kill()))
    await reader?.dispose()
    reader = undefined
  })

  const start = async (leaseDuration: number, renewInterval: number) => {
    const host = hostProcess(leaseDuration, renewInterval)
    processes.push(host)
    await host.ready()
    return host
  }

  /** Every event of the session, read through a third host (not a lease holder). */
  const events = async (id: string) => {
    reader ??= await TestHost.boot({ database: mysqlConfig() })
    const session = await reader.ctx.sessions.get(id)
    return session.read({ from: 0, limit: 10_000 })
  }

  it('refuses a second host with LEASE_HELD; a host frozen past its lease loses it and cannot append (LEASE_LOST, nothing written)', async () => {
    const [a, b] = await Promise.all([start(3000, 500), start(3000, 500)])
    const id = `lease-${randomUUID()}`
    expect(await a.send(`create ${id} ${tmpdir()}`)).to.include({ ok: true })
    expect(await a.send(`append ${id} a1`)).to.include({ ok: true, seq: 0 })

    const held = await b.send(`resume ${id}`)
    expect(held).to.include({ ok: false, code: 'LEASE_HELD' })
    expect(held.message).to.include(`${a.pid}@`).and.match(/lapses in \d+\.\d s/)
    // Refused without a lease, B appended nothing; A's lease is renewed while A runs.
    await sleep(4000)
    expect(await b.send(`resume ${id}`)).to.include({ ok: false, code: 'LEASE_HELD' })
    expect(await a.send(`append ${id} a2`)).to.include({ ok: true, seq: 1 })

    // Freeze A past its lease: B takes it (once lapsed) and appends.
    a.child.kill('SIGSTOP')
    let resumed: Answer
    const deadline = Date.now() + 60_000
    do {
      await sleep(250)
      resumed = await b.send(`resume ${id}`)
      if (!resumed.ok) expect(resumed.code).to.equal('LEASE_HELD')
    } while (!resumed.ok && Date.now() < deadline)
    expect(resumed).to.include({ ok: true })
    expect(await b.send(`append ${id} b1`)).to.include({ ok: true, seq: 2 })

    // Thawed, A still believes it drives the session: its appends are refused by the store.
    a.child.kill('SIGCONT')
    const lost = await a.send(`append ${id} a3`)
    expect(lost).to.include({ ok: false, code: 'LEASE_LOST' })
    expect(lost.message).to.include('nothing was written')
    expect(await a.send(`append ${id} a4`)).to.include({ ok: false, code: 'LEASE_LOST' })
    const again = await a.send(`resume ${id}`)
    expect(again).to.include({ ok: false, code: 'LEASE_HELD' })
    expect(again.message).to.include(`${b.pid}@`)
    expect(await b.send(`append ${id} b2`)).to.include({ ok: true, seq: 3 })

    const log = await events(id)
    expect(log.map((event) => event.seq)).to.deep.equal([0, 1, 2, 3])
    expect(log.map((event) => event.data.tag)).to.deep.equal(['a1', 'a2', 'b1', 'b2'])
  })

  it('a holder paused past its lease that no other host took renews it and drives on (same token), seqs contiguous', async () => {
    const a = await start(3000, 500)
    const id = `lease-${randomUUID()}`
    expect(await a.send(`create ${id} ${tmpdir()}`)).to.include({ ok: true })
    a.child.kill('SIGSTOP')
    await sleep(4500)
    a.child.kill('SIGCONT')
    // The first append after the thaw may race the first renewal: refused (lapsed) or accepted, never both.
    const first = await a.send(`append ${id} a1`)
    if (!first.ok) expect(first.code).to.equal('LEASE_LOST')
    let next: Answer
    const deadline = Date.now() + 30_000
    do {
      await sleep(250)
      next = await a.send(`append ${id} a2`)
    } while (!next.ok && Date.now() < deadline)
    expect(next).to.include({ ok: true })
    const log = await events(id)
    expect(log.map((event) => event.seq)).to.deep.equal(log.map((_, i) => i))
    expect(log.map((event) => event.data.tag).filter((tag) => tag === 'a1')).to.have.length(first.ok ? 1 : 0)
  })

  it('a slash command at another host once the holder froze past its lease fences that lease off: thawed, the holder cannot renew it and drive on (LEASE_LOST)', async () => {
    const a = await start(3000, 500)
    const id = `lease-${randomUUID()}`
    expect(await a.send(`create ${id} ${tmpdir()}`)).to.include({ ok: true })
    expect(await a.send(`append ${id} a1`)).to.include({ ok: true, seq: 0 })
    // B never resumes the session (as when admission refuses the resume): only the command is written there.
    const b = reader = await TestHost.boot({ database: mysqlConfig() })
    let runs = 0
    b.ctx.commands.register('probe', () => ({ runs: ++runs }))
    const atB = await b.ctx.sessions.get(id)
    expect(codeOf(await b.ctx.commands.input(atB, '/probe').catch((error) => error)), 'A\'s lease is live').to.equal('LEASE_HELD')

    a.child.kill('SIGSTOP')
    await sleep(4000)
    expect((await b.ctx.commands.input(atB, '/probe'))?.reply).to.deep.equal({ runs: 1 })
    // Thawed, A renews on its next tick: with the token it had, the command's writer would be raced.
    a.child.kill('SIGCONT')
    await sleep(1500)
    const after = await a.send(`append ${id} a2`)
    expect(after, 'A drives on after the command as if its lease were never lapsed').to.include({ ok: false, code: 'LEASE_LOST' })
    const log = await events(id)
    expect(log.map((event) => event.type)).to.deep.equal(['test/tick', 'user/message', 'command/reply'])
  })

  it('resumes racing on the holder host after a restart all succeed (they do not refuse each other)', async () => {
    const host = await TestHost.boot({ database: mysqlConfig() })
    reader = host
    const session = await host.ctx.sessions.create({ id: `lease-${randomUUID()}`, cwd: tmpdir() })
    await host.ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' })
    await host.restart()
    const agents = await Promise.all(Array.from({ length: 5 }, () => host.ctx.agents.resume(session.id)))
    expect(new Set(agents).size).to.equal(1)
    const event = await (await host.ctx.sessions.get(session.id)).append('test/tick', { tag: 'after-restart' })
    expect(event.seq).to.equal(0)
  })

  it('a holder killed (SIGKILL) on this machine is taken over at once, long before its lease would lapse; a live or foreign holder never', async () => {
    const [a, b] = await Promise.all([start(120_000, 5000), start(120_000, 5000)])
    const id = `lease-${randomUUID()}`
    expect(await a.send(`create ${id} ${tmpdir()}`)).to.include({ ok: true })
    expect(await a.send(`append ${id} a1`)).to.include({ ok: true, seq: 0 })
    // Alive (even frozen), A keeps it.
    a.child.kill('SIGSTOP')
    expect(await b.send(`resume ${id}`)).to.include({ ok: false, code: 'LEASE_HELD' })
    await a.kill()
    expect(await b.send(`resume ${id}`)).to.include({ ok: true })
    expect(await b.send(`append ${id} b1`)).to.include({ ok: true, seq: 1 })

    // A holder this host cannot place (another machine, or a pid of another namespace) is waited out.
    reader ??= await TestHost.boot({ database: mysqlConfig() })
    const foreign = `lease-${randomUUID()}`
    expect(await b.send(`create ${foreign} ${tmpdir()}`)).to.include({ ok: true })
    expect(await b.send('dispose')).to.include({ ok: true })
    const c = await start(120_000, 5000)
    const query = storeQuery(reader.ctx)
    for (const holder of [`4194304@another-machine in 0123456789ab.4026531836 started 2026-01-01T00:00:00.000Z #abcdef`, `4194304@${(await import('node:os')).hostname().slice(0, 120)} in 0123456789ab.1 started 2026-01-01T00:00:00.000Z #abcdef`]) {
      await query('UPDATE `taskward_lease` SET `holder` = ?, `expiresAt` = ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) + 120000 WHERE `sessionId` = ?', [holder, foreign])
      const refused = await c.send(`resume ${foreign}`)
      expect(refused).to.include({ ok: false, code: 'LEASE_HELD' })
      expect(refused.message).to.include('4194304@')
    }
  })

  it('a lease released on dispose lets the other host resume at once, long before it would lapse', async () => {
    const [a, b] = await Promise.all([start(120_000, 5000), start(120_000, 5000)])
    const id = `lease-${randomUUID()}`
    expect(await a.send(`create ${id} ${tmpdir()}`)).to.include({ ok: true })
    expect(await b.send(`resume ${id}`)).to.include({ ok: false, code: 'LEASE_HELD' })
    expect(await a.send('dispose')).to.include({ ok: true })
    expect(await b.send(`resume ${id}`)).to.include({ ok: true })
    expect(await b.send(`append ${id} b1`)).to.include({ ok: true, seq: 0 })
    expect((await events(id)).map((event) => event.data.tag)).to.deep.equal(['b1'])
  })
})

import { expect } from 'chai'
import { fileURLToPath } from 'node:url'
import { TestHost, removeTree, mysqlTestConfig, storeQuery, skipWithoutMysql } from '@taskward/testkit'
import { REPAIR_NAMESPACE, TASK_NAMESPACE } from '@taskward/protocol'
import { workspace } from '../plugins/repair/tests/fixtures'
import { HostProcess } from './host-process'

/*
 * Two real host processes sharing one MariaDB store (tests/repair-host.child.ts); A creates the main
 * session, so A holds its lease and drives it. A Confirm click on B is relayed through the store to A,
 * decided in A's maintenance window, and answers what A decided; both hosts read the session's state
 * from the store, so neither shows a state the log has moved past. A click on B while A is frozen
 * answers LEASE_HELD naming A and writes nothing; once A is killed, B takes the session over and
 * decides the click itself. A click A claimed but never answered (its lease lapsed) answers LEASE_HELD
 * saying so, and A's lapsed lease is fenced off first, so A thawed never carries it out. A click taken
 * by the host the lease passed to answers what that host decided. B's live stream says `changed` when
 * A appended; any host sweeps relay rows nobody reads. Runs when TASKWARD_TEST_MYSQL is set (as the MySQL suite).
 */
const url = process.env.TASKWARD_TEST_MYSQL
const CHILD = fileURLToPath(new URL('./repair-host.child.ts', import.meta.url))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A repair host process and its HTTP address. */
interface RepairHost {
  process: HostProcess
  url: string
  token: string
}

interface Setup {
  sessionId: string
  binding: { proposalId: string, taskId: string, revision: number }
}

describe('repair: two host processes on one MariaDB store', function () {
  this.timeout(180_000)
  const hosts: RepairHost[] = []
  let reader: TestHost | undefined
  let cwd: string | undefined

  before(function () { skipWithoutMysql(this) })
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.process.kill()))
    await reader?.dispose()
    reader = undefined
    if (cwd) await removeTree(cwd)
    cwd = undefined
  })

  const start = async (leaseDuration: number, renewInterval: number, relayTimeout: number): Promise<RepairHost> => {
    const child = new HostProcess(CHILD, [String(leaseDuration), String(renewInterval), String(relayTimeout)])
    const host = { process: child, url: '', token: '' }
    hosts.push(host)
    ;[host.url, host.token] = await child.ready()
    return host
  }

  /** A: a main session with a complete DIAMOND task and a pending repair of b, proposed on A. */
  const setup = async (a: RepairHost): Promise<Setup> => {
    cwd = await workspace()
    const answer = await a.process.send(`setup ${cwd}`)
    expect(answer, answer.message).to.include({ ok: true })
    const [sessionId, proposalId, taskId, revision] = answer.words
    return { sessionId, binding: { proposalId, taskId, revision: Number(revision) } }
  }

  /** fetch, saying on a refused connection whether the host died and what it printed. */
  const request = async (host: RepairHost, input: string, init: RequestInit) => {
    try {
      return await fetch(input, init)
    } catch (error) {
      const { exitCode, signalCode } = host.process.child
      throw new Error(`${input}: ${(error as Error).message} (${(error as any).cause?.message}); host ${host.process.pid} exit=${exitCode} signal=${signalCode}; output:\n${host.process.log}`)
    }
  }

  const click = async (host: RepairHost, { sessionId, binding }: Setup) => {
    const response = await request(host, `${host.url}/api/sessions/${sessionId}/repair`, {
      method: 'POST',
      headers: { 'authorization': `Bearer ${host.token}`, 'content-type': 'application/json', 'origin': host.url },
      body: JSON.stringify({ action: 'confirm', ...binding }),
    })
    return { host, status: response.status, body: await response.json() as any }
  }

  const get = async (host: RepairHost, path: string) => {
    const response = await request(host, `${host.url}${path}`, { headers: { 'authorization': `Bearer ${host.token}` } })
    expect(response.status, path).to.equal(200)
    return await response.json() as any
  }

  /**
   * What a host shows of the proposal and the current task, through GET /api/sessions/:id/repairs
   * and the console's GET /api/console/sessions/:id/view, which must agree.
   */
  const view = async (host: RepairHost, { sessionId, binding }: Setup) => {
    // The console's view first: it must catch up by itself, not through the repairs read after it.
    const page = await get(host, `/api/console/sessions/${sessionId}/view`)
    const repairs = await get(host, `/api/sessions/${sessionId}/repairs`)
    const status = repairs.proposals.find((entry: any) => entry.proposal.id === binding.proposalId)?.status
    const shown = {
      status: page.proposals.find((entry: any) => entry.id === binding.proposalId)?.status,
      current: page.current && { taskId: page.current.id, revision: page.current.revision, phase: page.current.phase },
    }
    // Read one after the other, the two agree — or the repairs read, the later one, is further on
    // (a follow-up turn moved the task between them); the console never shows more than the log.
    expect(shown.status, 'the console view').to.equal(status)
    expect(shown.current?.taskId, 'the console view').to.equal(repairs.current?.taskId)
    expect(shown.current?.revision ?? 0, 'the console view').to.be.at.most(repairs.current?.revision ?? 0)
    if (shown.current?.revision === repairs.current?.revision) expect(shown.current, 'the console view').to.deep.equal(repairs.current)
    return shown
  }

  /** A third host on the store, holding no lease: it reads the log and the relay's rows. */
  const readerHost = async () => reader ??= await TestHost.boot({ database: mysqlTestConfig(url!) })

  /** Every record of the session, read through the third host. */
  const recordsOf = async ({ sessionId }: Setup) => {
    const session = await (await readerHost()).ctx.sessions.get(sessionId)
    const events = await session.read({ from: 0, limit: 100_000 })
    return { events, records: events.filter((event) => event.type === 'extension/record') }
  }
  const receipts = (records: any[]) => records.filter((event) => event.data.namespace === REPAIR_NAMESPACE && event.data.kind === 'confirm')
  /** Task records that move a task from complete to active (a reopen); later active states of its follow-up turn are not. */
  const reopenedStates = (records: any[]) => {
    const phases = new Map<string, string>()
    return records.filter((event) => {
      if (event.data.namespace !== TASK_NAMESPACE) return false
      const { id, phase } = event.data.payload ?? {}
      const before = phases.get(id)
      phases.set(id, phase)
      return before === 'complete' && phase === 'active'
    })
  }

  /**
   * The reopened task as a host shows it: applied, and the task at the reopen's revision — or past it,
   * once the follow-up turn the reopen queued has moved it on (a state the log holds, not a stale one).
   */
  const expectReopened = (shown: { status: string, current: any }, taskId: string, revision: number) => {
    expect(shown.status).to.equal('applied')
    expect(shown.current.taskId).to.equal(taskId)
    expect(shown.current.revision, 'a revision the log has moved past').to.be.at.least(revision)
    if (shown.current.revision === revision) expect(shown.current.phase).to.equal('active')
  }

  it('50 concurrent clicks split over the driving host A and host B: one reopened, 49 already-applied, no LEASE_HELD; both hosts show the reopened task', async () => {
    const [a, b] = await Promise.all([start(15_000, 5000, 30_000), start(15_000, 5000, 30_000)])
    const session = await setup(a)
    const before = await recordsOf(session)
    // B has not seen the session before: it reads it from the store.
    expect(await view(b, session)).to.deep.include({ status: 'pending' })

    const clicks = await Promise.all(Array.from({ length: 50 }, (_, i) => click(i % 2 ? b : a, session)))

    expect(clicks.filter((c) => c.status !== 200).map((c) => `${c.host === a ? 'A' : 'B'}: ${c.status} ${c.body.code}: ${c.body.error}`)).to.deep.equal([])
    const outcomes = clicks.map((c) => c.body.outcome)
    expect(outcomes.filter((o) => o === 'reopened')).to.have.length(1)
    expect(outcomes.filter((o) => o === 'already-applied')).to.have.length(49)
    const revision = session.binding.revision + 1
    for (const c of clicks) expect(c.body).to.include({ taskId: session.binding.taskId, revision })

    // Both hosts show what the log says now: applied, and the task reopened at the next revision.
    for (const host of [a, b]) {
      expectReopened(await view(host, session), session.binding.taskId, revision)
    }
    // A click after the reopen answers already-applied on either host.
    for (const host of [b, a]) expect((await click(host, session)).body).to.include({ outcome: 'already-applied', revision })
    const after = await recordsOf(session)
    expect(receipts(after.records)).to.have.length(1)
    expect(reopenedStates(after.records)).to.have.length(reopenedStates(before.records).length + 1)
  })

  it('B, having shown the proposal pending, shows it applied and the task reopened once A alone confirmed it (console view and repairs view); a click orphaned long ago is not carried out', async () => {
    const [a, b] = await Promise.all([start(15_000, 5000, 30_000), start(15_000, 5000, 30_000)])
    const session = await setup(a)
    const pending = await view(b, session)
    expect(pending).to.deep.include({ status: 'pending' })
    expect(pending.current).to.include({ revision: session.binding.revision, phase: 'complete' })

    // A click relayed ten minutes ago by a host that died waiting is not carried out by A.
    const query = storeQuery((await readerHost()).ctx)
    const { proposalId, taskId, revision } = session.binding
    await query('INSERT INTO `taskward_repair_click` (`id`, `sessionId`, `holder`, `proposalId`, `taskId`, `revision`, `state`, `answer`, `requestedAt`) VALUES (?, ?, ?, ?, ?, ?, \'pending\', NULL, ?)',
      [`orphan-${session.sessionId}`, session.sessionId, 'a host that died', proposalId, taskId, revision, Date.now() - 600_000])
    await sleep(1500)
    expect(await query('SELECT `state` FROM `taskward_repair_click` WHERE `sessionId` = ?', [session.sessionId])).to.deep.equal([{ state: 'pending' }])
    expect(receipts((await recordsOf(session)).records)).to.have.length(0)

    expect((await click(a, session)).body).to.include({ outcome: 'reopened' })
    // Each view reads first on its own (the console's before the repairs read), see `view`.
    expectReopened(await view(b, session), session.binding.taskId, session.binding.revision + 1)
  })

  it('B\'s live stream of the session says changed once A appended (the reopen of a click on A): the page refetches the caught-up view', async () => {
    const [a, b] = await Promise.all([start(15_000, 5000, 30_000), start(15_000, 5000, 30_000)])
    const session = await setup(a)
    const controller = new AbortController()
    const response = await fetch(`${b.url}/api/console/sessions/${session.sessionId}/events`, { headers: { authorization: `Bearer ${b.token}` }, signal: controller.signal })
    expect(response.status).to.equal(200)
    const reader = response.body!.getReader()
    let text = ''
    const changedSeqs = () => [...text.matchAll(/event: changed\ndata: (.*)\n/g)].map((match) => JSON.parse(match[1]).seq as number)
    const reading = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return
          text += new TextDecoder().decode(value)
        }
      } catch {}
    })()
    try {
      for (const deadline = Date.now() + 5000; !text.includes('event: ready') && Date.now() < deadline;) await sleep(50)
      expect((await click(a, session)).body).to.include({ outcome: 'reopened' })
      const tail = (await recordsOf(session)).events.at(-1)!.seq
      for (const deadline = Date.now() + 8000; !changedSeqs().some((seq) => seq >= tail) && Date.now() < deadline;) await sleep(100)
      expect(changedSeqs(), text).to.satisfy((seqs: number[]) => seqs.some((seq) => seq >= tail))
      expectReopened(await view(b, session), session.binding.taskId, session.binding.revision + 1)
    } finally {
      controller.abort()
      await reading
    }
  })

  it('relay rows nobody reads any more are swept by any host, also those of sessions no host drives and claims never answered', async () => {
    const a = await start(15_000, 5000, 30_000)
    const query = storeQuery((await readerHost()).ctx)
    const tag = `sweep-${a.process.pid}-${Date.now()}`
    const row = (id: string, state: string, age: number) => query('INSERT INTO `taskward_repair_click` (`id`, `sessionId`, `holder`, `proposalId`, `taskId`, `revision`, `state`, `answer`, `requestedAt`) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)',
      [`${tag}-${id}`, `${tag}-session-${id}`, 'a host that died', 'p', 't', 1, state, Date.now() - age])
    await row('pending', 'pending', 2 * 3_600_000)
    await row('answered', 'answered', 2 * 3_600_000)
    await row('claimed', 'claimed', 2 * 86_400_000)
    await row('fresh', 'pending', 0)
    await row('claimed-recently', 'claimed', 2 * 3_600_000)
    // A host driving no session at all sweeps them as it starts (A made the table).
    await start(15_000, 5000, 30_000)
    const left = async () => (await query('SELECT `id` FROM `taskward_repair_click` WHERE `id` LIKE ?', [`${tag}-%`])).map((r: any) => r.id.slice(tag.length + 1)).sort()
    for (const deadline = Date.now() + 5000; (await left()).length > 2 && Date.now() < deadline;) await sleep(200)
    expect(await left()).to.deep.equal(['claimed-recently', 'fresh'])
    await query('DELETE FROM `taskward_repair_click` WHERE `id` LIKE ?', [`${tag}-%`])
  })

  it('a click on B while A is frozen answers LEASE_HELD naming A and writes nothing (not even once A thaws); once A is killed, B takes over and reopens', async () => {
    const [a, b] = await Promise.all([start(120_000, 5000, 1500), start(120_000, 5000, 1500)])
    const session = await setup(a)
    const before = await recordsOf(session)

    a.process.child.kill('SIGSTOP')
    const held = await click(b, session)
    expect(held.status).to.equal(409)
    expect(held.body.code).to.equal('LEASE_HELD')
    expect(held.body.error).to.include(`${a.process.pid}@`).and.include('nothing was written').and.include('Retry')
    expect(held.body.details.holder).to.match(new RegExp(`^${a.process.pid}@`))
    expect(held.body.details.expiresInMs).to.be.above(0)

    // Thawed, A finds the click withdrawn and carries out nothing.
    a.process.child.kill('SIGCONT')
    await sleep(1500)
    expect((await recordsOf(session)).events.length).to.equal(before.events.length)
    for (const host of [a, b]) expect(await view(host, session)).to.deep.include({ status: 'pending' })

    // Killed on this machine, A's lease is taken at once: B drives the session and decides the click.
    await a.process.kill()
    const taken = await click(b, session)
    expect(taken.body, JSON.stringify(taken.body)).to.include({ outcome: 'reopened', revision: session.binding.revision + 1 })
    expect(await view(b, session)).to.deep.include({ status: 'applied' })
    expect(receipts((await recordsOf(session)).records)).to.have.length(1)
  })

  it('a relayed click the driving host claimed but never answered (frozen, its lease lapsed) answers LEASE_HELD saying so, and writes nothing', async () => {
    const [a, b] = await Promise.all([start(3000, 500, 60_000), start(3000, 500, 60_000)])
    const session = await setup(a)
    const before = await recordsOf(session)
    const query = storeQuery((await readerHost()).ctx)

    // A freezes right after claiming the click: the claim is made here, as A's conditional update would.
    a.process.child.kill('SIGSTOP')
    const clicked = click(b, session)
    let claimed = 0
    for (const deadline = Date.now() + 10_000; !claimed && Date.now() < deadline; await sleep(20)) {
      claimed = (await query('UPDATE `taskward_repair_click` SET `state` = \'claimed\' WHERE `sessionId` = ? AND `state` = \'pending\'', [session.sessionId])).affectedRows
    }
    expect(claimed, 'B relayed the click').to.equal(1)
    const held = await clicked
    expect(held.status).to.equal(409)
    expect(held.body.code).to.equal('LEASE_HELD')
    expect(held.body.error).to.include(`${a.process.pid}@`).and.include('lost its lease before it answered').and.include('wrote nothing')
    expect((await recordsOf(session)).events.length).to.equal(before.events.length)
    // B removed its row: nothing is left for A to find when it thaws.
    expect(await query('SELECT `id` FROM `taskward_repair_click` WHERE `sessionId` = ?', [session.sessionId])).to.have.length(0)
  })

  it('a click A really claimed and then froze on past its lease answers LEASE_HELD on B, and A, thawed, never carries it out', async () => {
    const [a, b] = await Promise.all([start(3000, 500, 60_000), start(3000, 500, 60_000)])
    const session = await setup(a)
    const before = await recordsOf(session)
    const query = storeQuery((await readerHost()).ctx)

    // A's agent is in a maintenance window for 9 s: the click A claims waits behind it, as behind a turn.
    const busyUntil = Date.now() + 9000
    expect(await a.process.send(`busy ${session.sessionId} 9000`)).to.include({ ok: true })
    const clicked = click(b, session)
    let state: string | undefined
    for (const deadline = Date.now() + 5000; state !== 'claimed' && Date.now() < deadline; await sleep(20)) {
      ;[{ state } = { state: undefined }] = await query('SELECT `state` FROM `taskward_repair_click` WHERE `sessionId` = ?', [session.sessionId])
    }
    expect(state, 'A claimed the relayed click').to.equal('claimed')
    a.process.child.kill('SIGSTOP')
    const held = await clicked
    expect(held.status).to.equal(409)
    expect(held.body.code).to.equal('LEASE_HELD')
    expect(held.body.error).to.include(`${a.process.pid}@`).and.include('lost its lease before it answered')

    // Thawed before its window ends, A would renew its lease (nobody took it) and then carry the click
    // out, long after B told the user LEASE_HELD; B's answer must hold: nothing is ever written.
    a.process.child.kill('SIGCONT')
    await sleep(busyUntil - Date.now() + 4000)
    const after = await recordsOf(session)
    expect(receipts(after.records), 'a receipt written after B answered LEASE_HELD').to.have.length(0)
    expect(after.events.length).to.equal(before.events.length)
    // The click is still the user's to make, on either host. On A, whose agent is still live under the
    // fenced-off lease and which nobody drives now, A takes the session back and reopens the task.
    const again = await click(a, session)
    expect(again.body, JSON.stringify(again.body)).to.include({ outcome: 'reopened', revision: session.binding.revision + 1 })
    expect((await click(b, session)).body).to.include({ outcome: 'already-applied', revision: session.binding.revision + 1 })
    expect(receipts((await recordsOf(session)).records)).to.have.length(1)
  })

  it('a relayed click taken by a host other than the one it was relayed to (the lease passed meanwhile) answers what that host decided', async () => {
    const [a, b] = await Promise.all([start(3000, 500, 60_000), start(3000, 500, 60_000)])
    const session = await setup(a)
    const query = storeQuery((await readerHost()).ctx)
    // Frozen A drives; B relays the click to A and waits.
    a.process.child.kill('SIGSTOP')
    const clicked = click(b, session)
    let rows: any[] = []
    for (const deadline = Date.now() + 10_000; !rows.length && Date.now() < deadline; await sleep(20)) {
      rows = await query('SELECT `holder` FROM `taskward_repair_click` WHERE `sessionId` = ? AND `state` = \'pending\'', [session.sessionId])
    }
    expect(rows[0]?.holder, 'B relayed the click to A').to.match(new RegExp(`^${a.process.pid}@`))
    // A's lease lapses and B takes the session over (its agent busy for 4 s): the pending click is now
    // B's to decide, as the driving host's; the lease names B, not A.
    let resumed = await b.process.send(`takebusy ${session.sessionId} 4000`)
    for (const deadline = Date.now() + 30_000; !resumed.ok && Date.now() < deadline; await sleep(250)) {
      expect(resumed.code).to.equal('LEASE_HELD')
      resumed = await b.process.send(`takebusy ${session.sessionId} 4000`)
    }
    expect(resumed).to.include({ ok: true })
    const answered = await clicked
    expect(answered.body, JSON.stringify(answered.body)).to.include({ outcome: 'reopened', revision: session.binding.revision + 1 })
    expect(receipts((await recordsOf(session)).records)).to.have.length(1)
  })

  it('a host whose live agent lost the lease relays the click to the host that took it: reopened there, both hosts show it', async () => {
    const [a, b] = await Promise.all([start(3000, 500, 30_000), start(3000, 500, 30_000)])
    // B drives first; frozen past its lease, A takes the session over.
    const session = await setup(b)
    b.process.child.kill('SIGSTOP')
    let resumed = await a.process.send(`resume ${session.sessionId}`)
    for (const deadline = Date.now() + 30_000; !resumed.ok && Date.now() < deadline; await sleep(250)) {
      expect(resumed.code).to.equal('LEASE_HELD')
      resumed = await a.process.send(`resume ${session.sessionId}`)
    }
    expect(resumed).to.include({ ok: true })
    // Thawed, B still has its agent, under a lease it no longer holds.
    b.process.child.kill('SIGCONT')
    const taken = await click(b, session)
    expect(taken.body, JSON.stringify(taken.body)).to.include({ outcome: 'reopened', revision: session.binding.revision + 1 })
    for (const host of [a, b]) expect(await view(host, session)).to.deep.include({ status: 'applied' })
    expect(receipts((await recordsOf(session)).records)).to.have.length(1)
  })
})

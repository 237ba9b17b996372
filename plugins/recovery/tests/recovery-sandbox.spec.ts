import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Logger } from 'cordis'
import { removeTree, tempWorkspace, type TestHost } from '@taskward/testkit'
import { Config, findOnPath } from '../src'
import { isExecutable, stopLauncher } from '../src/launcher'
import { answerWorkspace, bootRecovery, readyTask, recoveryRecords, type RecoveryConfig } from './fixtures'

/** The sandbox policy: `auto` by default, what actually ran is recorded, bwrap hides the data directory. */
describe('recovery: the sandbox policy', function () {
  let host: TestHost | undefined
  let cwd: string | undefined
  const cleanup: string[] = []
  const saved = { path: process.env.PATH, data: process.env.TASKWARD_DATA }

  afterEach(async () => {
    process.env.PATH = saved.path
    if (saved.data === undefined) delete process.env.TASKWARD_DATA
    else process.env.TASKWARD_DATA = saved.data
    await host?.ctx.recovery.settled()
    await host?.dispose()
    for (const dir of [cwd, ...cleanup.splice(0)]) if (dir) await removeTree(dir)
    host = cwd = undefined
  })

  async function probe(argv: string[], config: RecoveryConfig = {}) {
    host ??= await bootRecovery(config)
    cwd = await answerWorkspace('alpha')
    const { session, task } = await readyTask(host, cwd, [{ id: 'probe', argv, timeoutMs: 20_000 }])
    const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    return { session, attempt }
  }

  it('refuses a configured check whose argument holds a NUL byte (CONFIG_INVALID naming it)', () => {
    let refusal: any
    try {
      Config({ checks: [{ id: 'nul', argv: ['sh', '-c', 'true\u0000'], timeoutMs: 1000 }] })
    } catch (error) {
      refusal = error
    }
    expect(refusal?.code).to.equal('CONFIG_INVALID')
    expect(refusal?.message).to.match(/checks\[0\]\.argv\[2\]/).and.match(/NUL byte/)
  })

  it('defaults to auto, in the configuration schema and in cordis.yml', async () => {
    expect(Config({}).sandbox).to.equal('auto')
    const { readFile } = await import('node:fs/promises')
    const yml = await readFile(join(import.meta.dirname, '../../../cordis.yml'), 'utf8')
    expect(yml).to.match(/- id: recovery[\s\S]*?sandbox: auto/)
  })

  it('auto without bubblewrap never falls back to copy: checks are refused, coded, and a warning at start says how to fix it', async () => {
    const warnings: string[] = []
    const target: Logger.Target = { record: (record) => { if (record.type === 'warn') warnings.push(record.content) }, levels: { base: 2 } }
    Logger.targets.push(target)
    try {
      // A PATH without bwrap stands for a host that lacks it.
      const empty = await mkdtemp(join(tmpdir(), 'taskward-empty-path-'))
      cleanup.push(empty)
      process.env.PATH = empty
      host = await bootRecovery({ sandbox: 'auto' })
      const choice = await host.ctx.recovery.sandbox()
      expect(choice.kind).to.equal('bwrap')
      cwd = await answerWorkspace('alpha')
      const marker = join(cwd, 'ran')
      const { session, task } = await readyTask(host, cwd, [{ id: 'probe', argv: ['/bin/sh', '-c', `echo ran > ${marker}`], timeoutMs: 20_000 }])
      const refused = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' }).then(() => undefined, (error) => error)
      expect(refused?.code).to.equal('SERVICE_UNAVAILABLE')
      expect(refused?.message).to.match(/sandbox: copy explicitly/).and.match(/install bubblewrap/i).and.match(/\/proc/)
      expect(existsSync(marker)).to.equal(false)
      expect(await recoveryRecords(session, 'attempt')).to.deep.equal([])
      // Through the completion gate: refused with the same code, the task is not complete.
      const gate = await host.ctx.tools.execute(session, 'task_request_completion', {}, { agentId: session.id })
      expect(gate.error?.code).to.equal('SERVICE_UNAVAILABLE')
      expect(existsSync(marker)).to.equal(false)
      const refusals = warnings.filter((text) => /REFUSED/.test(text))
      expect(refusals).to.have.length(1)
      expect(refusals[0]).to.match(/install bubblewrap/i).and.match(/sandbox: copy explicitly/).and.match(/environ/)
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
  })

  it('copy runs only when asked for explicitly, and warns at start that it does not isolate the host environment', async () => {
    const warnings: string[] = []
    const target: Logger.Target = { record: (record) => { if (record.type === 'warn') warnings.push(record.content) }, levels: { base: 2 } }
    Logger.targets.push(target)
    try {
      const { attempt } = await probe(['true'], { sandbox: 'copy' })
      expect(attempt.sandbox).to.equal('copy')
      expect(warnings.filter((text) => /NOT isolated/.test(text) && /environ/.test(text))).to.have.length(1)
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
  })

  it('copy stays copy; an attempt without checks names no sandbox', async () => {
    const { attempt } = await probe(['true'], { sandbox: 'copy' })
    expect(attempt.sandbox).to.equal('copy')
    const other = await answerWorkspace('alpha')
    cleanup.push(other)
    const { session, task } = await readyTask(host!, other, [])
    const unverified = await host!.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(unverified.verdict).to.equal('MISSING')
    expect(unverified).to.not.have.property('sandbox')
  })

  describe('where bubblewrap is installed', () => {
    before(async function () {
      if (await findOnPath('bwrap')) return
      if (process.env.CI) throw new Error('bubblewrap (bwrap) must be installed in CI: .ci/run installs it')
      this.skip()
    })

    it('auto runs checks in bwrap and records it', async () => {
      const { attempt } = await probe(['true'])
      expect((await host!.ctx.recovery.sandbox()).kind).to.equal('bwrap')
      expect(attempt.sandbox).to.equal('bwrap')
    })

    it('asks again for the sandbox when the launcher could not start as the plugin started (never refused for the plugin\'s life, no unhandled rejection)', async () => {
      const rejections: unknown[] = []
      const onRejection = (reason: unknown) => { rejections.push(reason) }
      process.on('unhandledRejection', onRejection)
      const real = process.execPath
      try {
        await stopLauncher()
        // A launcher that cannot start (here no node where the host's was; in life EAGAIN, EMFILE or ENOMEM from fork).
        process.execPath = join(tmpdir(), 'taskward-no-such-node')
        host = await bootRecovery({ sandbox: 'auto' })
        // Whatever launcher the plugin asked at start is refused by now (a dead launcher refuses all it holds at once).
        expect(await isExecutable('/').then(() => 'ran', (error) => error.code)).to.equal('INTERNAL')
        await new Promise((resolve) => setImmediate(resolve))
        process.execPath = real
        const { attempt } = await probe(['true'])
        expect(attempt.sandbox).to.equal('bwrap')
        expect(attempt.checks[0]).to.include({ verdict: 'PASS' })
      } finally {
        process.execPath = real
        process.off('unhandledRejection', onRejection)
      }
      expect(rejections.map(String)).to.deep.equal([])
    })

    it('hides the Taskward data directory from a check, and keeps $HOME visible', async () => {
      // Outside /tmp (bwrap's /tmp is private anyway), like a real data directory.
      await mkdir(join(homedir(), '.cache'), { recursive: true })
      const data = await mkdtemp(join(homedir(), '.cache', 'taskward-data-'))
      cleanup.push(data)
      await writeFile(join(data, 'taskward.db'), 'session-database-secret')
      process.env.TASKWARD_DATA = data
      const read = ['sh', '-c', `cat '${data}/taskward.db'; ls '${homedir()}' > /dev/null && echo home-visible`]
      const sandboxed = await probe(read, { sandbox: 'bwrap' })
      expect(sandboxed.attempt.checks[0].outputExcerpt).to.not.include('session-database-secret')
      expect(sandboxed.attempt.checks[0].outputExcerpt).to.include('home-visible')
      await host!.dispose()
      host = undefined
      // Copy mode is not isolation: the same read succeeds (docs/recovery.md says so).
      const copied = await probe(read, { sandbox: 'copy' })
      expect(copied.attempt.checks[0].outputExcerpt).to.include('session-database-secret')
    })

    it('leaves a data directory inside the workspace out of the check\'s copy (the default data/ of a host run in the workspace)', async () => {
      host = await bootRecovery({ sandbox: 'bwrap' })
      cwd = await tempWorkspace({ 'answer.txt': 'alpha', 'data/taskward.db': 'session-database-secret', 'src/data/kept.txt': 'kept' })
      process.env.TASKWARD_DATA = join(cwd, 'data')
      const { session, task } = await readyTask(host, cwd, [{ id: 'probe', argv: ['sh', '-c', 'cat data/taskward.db; cat src/data/kept.txt; ls'], timeoutMs: 20_000 }])
      const [check] = (await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })).checks
      expect(check.outputExcerpt).to.not.include('session-database-secret')
      expect(check.outputExcerpt).to.include('kept').and.include('answer.txt')
    })
  })
  it('leaves a data directory inside the workspace out of the candidate (its database changes with every event, the candidate does not)', async () => {
    host = await bootRecovery({ sandbox: 'copy' })
    cwd = await tempWorkspace({ 'answer.txt': 'right', 'data/taskward.db': 'events 1..10' })
    process.env.TASKWARD_DATA = join(cwd, 'data')
    const { session, task } = await readyTask(host, cwd, [{ id: 'ok', argv: ['true'], timeoutMs: 10_000 }])
    const first = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    // What the host does to its own database between two attempts (the workspace itself is untouched).
    await writeFile(join(cwd, 'data/taskward.db'), 'events 1..20')
    await writeFile(join(cwd, 'data/taskward.db-wal'), 'frames')
    const second = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(second.candidate.digest).to.equal(first.candidate.digest)
    await writeFile(join(cwd, 'answer.txt'), 'changed')
    const third = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(third.candidate.digest).to.not.equal(first.candidate.digest)
  })
})

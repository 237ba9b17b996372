import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { removeTree, type TestHost } from '@taskward/testkit'
import { findOnPath, RecoveryPlugin } from '../src'
import { alive, answerWorkspace, bootRecovery, checkAreas, readyTask, until } from './fixtures'

/** A long check started through a host, with what it reported once running: its pid and its copy. */
async function startLong(host: TestHost, markers: string, name: string) {
  const cwd = await answerWorkspace('alpha')
  // Copy mode: the check can report its real pid and working directory outside its copy.
  const report = join(markers, name)
  const { session, task } = await readyTask(host, cwd, [{ id: 'long', argv: ['sh', '-c', `echo $$ "$PWD" > '${report}'; exec sleep 30`], timeoutMs: 60_000 }])
  const settled = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' }).then((attempt) => ({ attempt }), (error) => ({ error }))
  await until(async () => (await readFile(report, 'utf8').catch(() => '')).includes('\n'), `${name}'s check to start`)
  const [pid, work] = (await readFile(report, 'utf8')).trim().split(' ')
  return { cwd, pid: Number(pid), root: dirname(work), settled }
}

/** The pids of the processes whose argv is exactly `argv` (seen from outside any sandbox's PID namespace). */
async function pidsOf(argv: string[]): Promise<number[]> {
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline === `${argv.join('\0')}\0`) found.push(Number(entry))
  }
  return found
}

/*
 * A check still running when its plugin is disposed (the host stopped, the plugin unloaded or reloaded)
 * would run on to its own timeout, minutes, holding its copy. The plugin kills what IT started (the
 * launcher is process-wide and may serve another host in this process), and the attempt records nothing.
 */
describe('recovery: disposing the plugin ends the checks it started', function () {
  this.timeout(60_000)
  const hosts: TestHost[] = []
  const pids: number[] = []
  const cleanup: string[] = []

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.dispose()
    for (const pid of pids.splice(0)) if (await alive(pid)) process.kill(pid, 'SIGKILL')
    for (const dir of cleanup.splice(0)) await removeTree(dir)
  })

  it('kills a running check\'s process group on dispose, records no verdict, removes its copy, and leaves another host\'s check running', async () => {
    const markers = await mkdtemp(join(tmpdir(), 'taskward-dispose-'))
    cleanup.push(markers)
    const [disposed, other] = [await bootRecovery({ sandbox: 'copy' }), await bootRecovery({ sandbox: 'copy' })]
    hosts.push(disposed, other)
    const mine = await startLong(disposed, markers, 'disposed')
    const theirs = await startLong(other, markers, 'other')
    pids.push(mine.pid, theirs.pid)
    cleanup.push(mine.cwd, theirs.cwd)
    expect(await alive(mine.pid)).to.equal(true)
    const stopped = Date.now()
    await disposed.dispose()
    await until(async () => !(await alive(mine.pid)), 'the disposed host\'s check to die', 2000)
    // Killed by the dispose, not run to a result: no PASS or FAIL, the attempt is refused.
    const outcome = await Promise.race([mine.settled, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 2000))])
    expect(outcome, 'the attempt settled').to.not.equal('pending')
    expect((outcome as { attempt?: unknown }).attempt, 'no attempt recorded').to.equal(undefined)
    expect((outcome as { error: { code: string } }).error.code).to.equal('ABORTED')
    expect((outcome as { error: Error }).error.message).to.match(/disposed/).and.match(/run the checks again/)
    expect(existsSync(mine.root), 'the copy is removed').to.equal(false)
    expect(Date.now() - stopped).to.be.lessThan(3000)
    // Only its own: the other host's check runs on.
    expect(await alive(theirs.pid)).to.equal(true)
    await other.dispose()
    await until(async () => !(await alive(theirs.pid)), 'the other host\'s check to die', 2000)
    expect('error' in await theirs.settled).to.equal(true)
    await until(async () => !existsSync(theirs.root), 'the other copy to be removed', 2000)
  })

  it('kills a running check when only the plugin is unloaded (a reload), the host staying up', async () => {
    const markers = await mkdtemp(join(tmpdir(), 'taskward-dispose-'))
    cleanup.push(markers)
    const host = await bootRecovery({ sandbox: 'copy' })
    hosts.push(host)
    const run = await startLong(host, markers, 'unloaded')
    pids.push(run.pid)
    cleanup.push(run.cwd)
    ;(host.ctx as any).registry.delete(RecoveryPlugin)
    await until(async () => !(await alive(run.pid)), 'the check to die', 2000)
    expect(((await run.settled) as { error: { code: string } }).error.code).to.equal('ABORTED')
    await until(async () => !existsSync(run.root), 'the copy to be removed', 2000)
  })
  it('kills a running check inside bubblewrap on dispose (bwrap\'s group, and with it the sandbox)', async function () {
    if (!await findOnPath('bwrap')) {
      if (process.env.CI) throw new Error('bubblewrap (bwrap) must be installed in CI: .ci/run installs it')
      this.skip()
    }
    const host = await bootRecovery({ sandbox: 'bwrap' })
    hosts.push(host)
    // Unique: found among the machine's processes, and its copy among the temp directory's.
    const tag = `${Date.now() % 100_000}${process.pid}`
    const sleep = ['sleep', `30.${tag}`]
    const cwd = await answerWorkspace('alpha')
    cleanup.push(cwd)
    const { session, task } = await readyTask(host, cwd, [{ id: 'long', argv: ['sh', '-c', `touch started-${tag}; exec ${sleep.join(' ')}`], timeoutMs: 60_000 }])
    const settled = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' }).then((attempt) => ({ attempt }), (error) => ({ error }))
    const copies = async () => (await checkAreas()).filter((area) => existsSync(join(area, 'work', `started-${tag}`)))
    await until(async () => (await copies()).length === 1 && (await pidsOf(sleep)).length === 1, 'the check to start')
    const [pid] = await pidsOf(sleep)
    const [root] = await copies()
    pids.push(pid)
    await host.dispose()
    await until(async () => !(await alive(pid)), 'the sandboxed check to die', 2000)
    expect(((await settled) as { error: { code: string } }).error.code).to.equal('ABORTED')
    await until(async () => !existsSync(root), 'the copy to be removed', 2000)
  })
})

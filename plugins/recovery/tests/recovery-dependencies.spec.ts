import { chmod, mkdir, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'chai'
import { removeTree, tempWorkspace, type TestHost } from '@taskward/testkit'
import { TaskwardError } from '@taskward/protocol'
import { bootRecovery, checkAreas, closeRecovery, readyTask, recoveryRecords, requireBwrap, until } from './fixtures'

/** A project after `npm install`: a dependency, its bin link, and the project's own file. */
const installedProject = async () => {
  const cwd = await tempWorkspace({
    'answer.txt': 'right',
    'node_modules/dep/index.js': 'module.exports = 42\n',
    'node_modules/dep/bin.sh': '#!/bin/sh\necho "dep tool ran: $(cat node_modules/dep/index.js)"\n',
    'packages/a/node_modules/inner/x.js': 'inner\n',
  })
  await chmod(join(cwd, 'node_modules/dep/bin.sh'), 0o755)
  await mkdir(join(cwd, 'node_modules/.bin'))
  await symlink('../dep/bin.sh', join(cwd, 'node_modules/.bin/dep-tool'))
  return cwd
}

/** Whether a check has started: it touches $HOME/started, its HOME being inside its area (in memory or the temp directory). */
async function checkStarted(): Promise<boolean> {
  for (const area of await checkAreas()) {
    if (await stat(join(area, 'home/started')).then(() => true, () => false)) return true
  }
  return false
}

/*
 * Dependency directories in a check (docs/recovery.md): bubblewrap mounts them read-only instead of
 * copying them; copy mode copies them as before.
 */
describe('recovery: dependency directories in the checks', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  let cwd: string | undefined

  before(requireBwrap)
  afterEach(async () => {
    await closeRecovery(host, cwd)
    host = cwd = undefined
  })

  async function attempt(sandbox: 'bwrap' | 'copy', argv: string[], pin?: string[]) {
    host = await bootRecovery({ sandbox })
    cwd ??= await installedProject()
    const { session, task } = await readyTask(host, cwd, [{ id: 'probe', argv, timeoutMs: 20_000, ...pin ? { pin } : {} }])
    return { session, task, result: await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' }) }
  }

  it('runs a dependency\'s bin link from the mount, and mounts (not copies) every dependency directory', async () => {
    const inode = async (path: string) => String((await stat(join(cwd!, path))).ino)
    cwd = await installedProject()
    const probe = ['sh', '-c', 'node_modules/.bin/dep-tool && stat -c "ino %i" node_modules/dep/index.js packages/a/node_modules/inner/x.js && stat -c "own %i" answer.txt']
    const { result } = await attempt('bwrap', probe)
    const [check] = result.checks
    expect(check.verdict, check.outputExcerpt).to.equal('PASS')
    expect(check.outputExcerpt).to.include('dep tool ran: module.exports = 42')
    // The same inodes as the workspace's own files: mounted, not copied (a nested package's too) …
    expect(check.outputExcerpt).to.include(`ino ${await inode('node_modules/dep/index.js')}`)
    expect(check.outputExcerpt).to.include(`ino ${await inode('packages/a/node_modules/inner/x.js')}`)
    // … while the project's own file is a copy.
    expect(check.outputExcerpt).to.not.include(`own ${await inode('answer.txt')}`)
  })

  it('runs a program named by its path inside a dependency directory (argv[0] node_modules/.bin/…), which is mounted, not in the copy', async () => {
    const { result } = await attempt('bwrap', ['node_modules/.bin/dep-tool'])
    const [check] = result.checks
    expect(check.verdict, check.outputExcerpt).to.equal('PASS')
    expect(check.outputExcerpt).to.include('dep tool ran')
  })

  it('copies dependency directories in copy mode, as before', async () => {
    cwd = await installedProject()
    const { result } = await attempt('copy', ['sh', '-c', 'node_modules/.bin/dep-tool && stat -c "ino %i" node_modules/dep/index.js'])
    const [check] = result.checks
    expect(check.verdict, check.outputExcerpt).to.equal('PASS')
    expect(check.outputExcerpt).to.not.include(`ino ${(await stat(join(cwd, 'node_modules/dep/index.js'))).ino}`)
  })

  it('fails a check that writes into a dependency directory, says why, and leaves the workspace\'s dependency as it was', async () => {
    const { result } = await attempt('bwrap', ['sh', '-c', 'echo patched > node_modules/dep/index.js'])
    const [check] = result.checks
    expect(check.verdict).to.equal('FAIL')
    expect(check.outputExcerpt).to.match(/Read-only file system/)
    expect(check.outputExcerpt).to.include('[taskward] The dependency directories (node_modules, packages/a/node_modules) are mounted read-only')
    expect(await readFile(join(cwd!, 'node_modules/dep/index.js'), 'utf8')).to.equal('module.exports = 42\n')
  })

  it('still pins a file inside a dependency directory when a check names it, read through the mount', async () => {
    const { result } = await attempt('bwrap', ['sh', '-c', 'cat node_modules/dep/index.js'], ['node_modules/dep/index.js'])
    const [check] = result.checks
    expect(check.verdict, check.outputExcerpt).to.equal('PASS')
  })

  it('never records a check under the old digest when a dependency changes while the check that mounts it runs (the mount is live)', async () => {
    cwd = await installedProject()
    host = await bootRecovery({ sandbox: 'bwrap' })
    // The check marks its start in its HOME (inside the check's temp area), then waits.
    const { session, task } = await readyTask(host, cwd, [{ id: 'slow', argv: ['sh', '-c', 'touch "$HOME/started"; sleep 2'], timeoutMs: 20_000 }])
    const old = (await host.ctx.workspace.stamp(cwd)).digest
    const running = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    await until(checkStarted, 'the check to start')
    await writeFile(join(cwd, 'node_modules/dep/index.js'), 'module.exports = 43\n')
    const result = await running
    // The attempt that saw the change was refused and read again: what is recorded is the new candidate.
    const now = (await host.ctx.workspace.stamp(cwd)).digest
    expect(now).to.not.equal(old)
    expect(result.candidate.digest).to.equal(now)
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts.map((record) => record.payload.candidate.digest)).to.not.include(old)
  })

  it('reads the copied part again for each copy: a project file written while a check runs sends the attempt back to read the candidate', async () => {
    cwd = await installedProject()
    host = await bootRecovery({ sandbox: 'bwrap' })
    const slow = { id: 'slow', argv: ['sh', '-c', 'touch "$HOME/started"; sleep 2'], timeoutMs: 20_000 }
    const reader = { id: 'reader', argv: ['cat', 'answer.txt'], timeoutMs: 20_000 }
    const { session, task } = await readyTask(host, cwd, [slow, reader])
    const old = (await host.ctx.workspace.stamp(cwd)).digest
    const running = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    await until(checkStarted, 'the slow check to start')
    await writeFile(join(cwd, 'answer.txt'), 'changed')
    const result = await running
    expect(result.candidate.digest).to.not.equal(old)
    expect(result.candidate.digest).to.equal((await host.ctx.workspace.stamp(cwd)).digest)
    expect(result.checks.find((check) => check.checkId === 'reader')!.outputExcerpt).to.include('changed')
    expect((await recoveryRecords(session, 'attempt')).map((record) => record.payload.candidate.digest)).to.not.include(old)
  })

  it('sees a dependency written and put back while the check ran (content and mtime restored): the check that read it is not recorded', async () => {
    cwd = await installedProject()
    host = await bootRecovery({ sandbox: 'bwrap' })
    const file = join(cwd, 'node_modules/dep/index.js')
    // Passes only on the content the workspace holds for a moment, while the check runs.
    // It reads at about 1 s and ends at about 3 s: the file is put back in between.
    const check = { id: 'grep', argv: ['sh', '-c', 'touch "$HOME/started"; sleep 1; cat node_modules/dep/index.js; grep -q 43 node_modules/dep/index.js; found=$?; sleep 2; exit $found'], timeoutMs: 20_000 }
    // Whole seconds, so that putting the times back is exact to the nanosecond (utimes takes a double).
    await utimes(file, 1_600_000_000, 1_600_000_000)
    const { session, task } = await readyTask(host, cwd, [check])
    const running = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    await until(checkStarted, 'the check to start')
    await writeFile(file, 'module.exports = 43\n')
    await new Promise((resolve) => setTimeout(resolve, 1_800))
    await writeFile(file, 'module.exports = 42\n')
    await utimes(file, 1_600_000_000, 1_600_000_000)
    const result = await running
    // The run that read 43 was refused; the attempt read the candidate again and judged 42.
    expect(result.checks[0].verdict, result.checks[0].outputExcerpt).to.equal('FAIL')
    expect(result.checks[0].outputExcerpt).to.include('module.exports = 42')
    expect((await recoveryRecords(session, 'attempt')).flatMap((record) => record.payload.checks.map((c: any) => c.verdict))).to.not.include('PASS')
  })

  it('hides a data directory that lies inside a mounted dependency directory', async () => {
    cwd = await installedProject()
    await mkdir(join(cwd, 'node_modules/.cache/taskward'), { recursive: true })
    await writeFile(join(cwd, 'node_modules/.cache/taskward/taskward.db'), 'session-database-secret')
    const saved = process.env.TASKWARD_DATA
    process.env.TASKWARD_DATA = join(cwd, 'node_modules/.cache/taskward')
    try {
      const { result } = await attempt('bwrap', ['sh', '-c', 'cat node_modules/.cache/taskward/taskward.db; ls -a node_modules/.cache/taskward; cat node_modules/dep/index.js'])
      const [check] = result.checks
      expect(check.outputExcerpt).to.not.include('session-database-secret')
      expect(check.outputExcerpt).to.include('module.exports = 42')
    } finally {
      if (saved === undefined) delete process.env.TASKWARD_DATA
      else process.env.TASKWARD_DATA = saved
    }
  })

  for (const sandbox of ['bwrap', 'copy'] as const) {
    it(`refuses a copy holding a project link that leads out of the workspace, not one inside a dependency directory (${sandbox})`, async () => {
      const outside = await tempWorkspace({ 'impl.txt': 'right' })
      try {
        cwd = await installedProject()
        await symlink('/usr/bin/env', join(cwd, 'node_modules/.bin/allowed-outside'))
        await symlink(join(outside, 'impl.txt'), join(cwd, 'answer-link.txt'))
        const refused = (await attempt(sandbox, ['cat', 'answer-link.txt'])).result.checks[0]
        expect(refused.verdict).to.equal('INCONCLUSIVE')
        expect(refused.outputExcerpt).to.include('answer-link.txt').and.include('outside the workspace')
        await rm(join(cwd, 'answer-link.txt'))
        // A relative one that climbs out through a link to the parent: resolved, not read by its text.
        await mkdir(join(cwd, 'sub'))
        await symlink('..', join(cwd, 'sub/up'))
        await symlink('up/../../escape', join(cwd, 'sub/climb'))
        await host!.dispose()
        host = undefined
        const climbing = (await attempt(sandbox, ['true'])).result.checks[0]
        expect(climbing.verdict).to.equal('INCONCLUSIVE')
        expect(climbing.outputExcerpt).to.include('sub/climb')
        // A project link into a dependency directory stays, whatever the dependency's own links reach.
        await rm(join(cwd, 'sub/climb'))
        await mkdir(join(cwd, '.venv/bin'), { recursive: true })
        await symlink('/usr/bin/env', join(cwd, '.venv/bin/python'))
        await symlink('.venv/bin/python', join(cwd, 'python'))
        await host!.dispose()
        host = undefined
        const intoVenv = (await attempt(sandbox, ['./python', 'true'])).result.checks[0]
        expect(intoVenv.verdict, intoVenv.outputExcerpt).to.equal('PASS')
      } finally {
        await removeTree(outside)
      }
    })
  }

  it('refuses (ARTIFACT_CHANGED, candidate-moved) a rerun whose dependency moved while its check ran, recording nothing', async () => {
    cwd = await installedProject()
    host = await bootRecovery({ sandbox: 'bwrap' })
    const { session, task } = await readyTask(host, cwd, [{ id: 'slow', argv: ['sh', '-c', 'touch "$HOME/started-$(date +%s%N)"; sleep 2'], timeoutMs: 20_000 }])
    await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    const before = (await recoveryRecords(session, 'attempt')).length
    const homes = async () => {
      let count = 0
      for (const area of await checkAreas()) count += (await readdir(join(area, 'home')).catch(() => [])).length
      return count
    }
    const rerun = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress', rerun: true }).then(() => undefined, (error) => error)
    await until(async () => (await homes()) > 0, 'the rerun\'s check to start')
    await writeFile(join(cwd, 'node_modules/dep/index.js'), 'module.exports = 44\n')
    const error = await rerun
    expect(TaskwardError.is(error, 'ARTIFACT_CHANGED'), String(error)).to.equal(true)
    expect(error.details).to.include({ reason: 'candidate-moved', checkId: 'slow' })
    expect((await recoveryRecords(session, 'attempt')).length).to.equal(before)
  })
})

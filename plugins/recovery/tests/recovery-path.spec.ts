import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join, relative } from 'node:path'
import { Logger } from 'cordis'
import { removeTree, tempWorkspace, type TestHost } from '@taskward/testkit'
import { findOnPath, programExists, scrubbedEnv } from '../src'
import { whichAll } from '../src/launcher'
import { runGit } from '../src/git'
import { bootRecovery, readyTask } from './fixtures'

/*
 * A relative PATH entry (`.`, `bin`, an empty one: the cwd) would be looked up against the host's cwd but
 * resolved by the check against ITS cwd, the candidate's copy: files a model wrote. A check's PATH keeps
 * only absolute entries, for its environment and for every lookup.
 */
describe('recovery: a check\'s PATH keeps only absolute entries', function () {
  let host: TestHost | undefined
  const cleanup: string[] = []
  const saved = process.env.PATH

  afterEach(async () => {
    process.env.PATH = saved
    await host?.ctx.recovery.settled()
    await host?.dispose()
    for (const dir of cleanup.splice(0)) await removeTree(dir)
    host = undefined
  })

  it('drops relative and empty entries from the check\'s environment', () => {
    const { PATH } = scrubbedEnv('/tmp/home', ['.', 'bin', '', 'node_modules/.bin', '/usr/local/bin', '/usr/bin'].join(delimiter))
    expect(PATH).to.equal(['/usr/local/bin', '/usr/bin'].join(delimiter))
    // Nothing absolute left: never an empty PATH (which execvp reads as the cwd).
    expect(scrubbedEnv('/tmp/home', ['.', 'bin'].join(delimiter)).PATH).to.equal(['/usr/bin', '/bin'].join(delimiter))
  })

  it('never finds a program through a relative entry (it would be resolved against the launcher\'s cwd, not the check\'s)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taskward-relative-path-'))
    cleanup.push(dir)
    const program = 'taskward-relative-probe'
    await writeFile(join(dir, program), '#!/bin/sh\nexit 0\n')
    await chmod(join(dir, program), 0o755)
    // The launcher runs in this process's cwd: relative to it, the entry names `dir`.
    const path = [relative(process.cwd(), dir), '/usr/bin'].join(delimiter)
    expect(await findOnPath(program, path)).to.equal(undefined)
    expect(await programExists(program, dir, path)).to.equal(false)
    // The launcher holds to it too, whoever asks.
    expect(await whichAll([program], path)).to.deep.equal([undefined])
    // Absolute, it is found as before.
    expect(await findOnPath(program, [dir, '/usr/bin'].join(delimiter))).to.equal(join(dir, program))
  })

  for (const sandbox of ['copy', 'bwrap'] as const) {
    it(`runs the system's program, not one the candidate planted in a directory named relatively on PATH (${sandbox})`, async function () {
      if (sandbox === 'bwrap' && !await findOnPath('bwrap')) {
        if (process.env.CI) throw new Error('bubblewrap (bwrap) must be installed in CI: .ci/run installs it')
        this.skip()
      }
      const planted = '#!/bin/sh\necho PLANTED-RAN\nexit 0\n'
      const cwd = await tempWorkspace({ 'answer.txt': 'alpha', 'bin/sh': planted, 'bin/taskward-only-planted': planted, 'README.md': '# x\n' })
      cleanup.push(cwd)
      await chmod(join(cwd, 'bin/sh'), 0o755)
      await chmod(join(cwd, 'bin/taskward-only-planted'), 0o755)
      process.env.PATH = ['bin', saved].join(delimiter)
      host = await bootRecovery({ sandbox })
      const { session, task } = await readyTask(host, cwd, [
        { id: 'shadowed', argv: ['sh', '-c', 'echo GENUINE; echo "PATH=$PATH"'], timeoutMs: 20_000 },
        { id: 'planted', argv: ['taskward-only-planted'], timeoutMs: 20_000 },
      ])
      const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
      const [shadowed, only] = attempt.checks
      expect(shadowed.outputExcerpt).to.include('GENUINE').and.not.include('PLANTED-RAN')
      const path = /PATH=(.*)/.exec(shadowed.outputExcerpt ?? '')![1].split(delimiter)
      expect(path.filter((entry) => !entry.startsWith('/'))).to.deep.equal([])
      expect(only.outputExcerpt).to.not.include('PLANTED-RAN')
      expect(only.verdict).to.not.equal('PASS')
    })
  }

  // Relative (`bin`, resolved against the host's cwd) or absolute inside the workspace (as npx puts
  // <workspace>/node_modules/.bin): either way the git the controller runs there, unsandboxed, is the system's.
  for (const [dir, onPath] of [['bin', 'relative'], ['node_modules/.bin', 'absolute']] as const) {
    it(`runs the system's git for the controller, never one the workspace planted in ${dir} (on PATH ${onPath})`, async () => {
      const markers = await mkdtemp(join(tmpdir(), 'taskward-markers-'))
      cleanup.push(markers)
      const cwd = await tempWorkspace({ [`${dir}/git`]: `#!/bin/sh\ntouch '${join(markers, 'planted-git')}'\n`, 'README.md': '# x\n' })
      cleanup.push(cwd)
      await chmod(join(cwd, dir, 'git'), 0o755)
      process.env.PATH = [onPath === 'relative' ? dir : join(cwd, dir), saved].join(delimiter)
      const outcome = await runGit(cwd, ['--version'])
      expect(existsSync(join(markers, 'planted-git'))).to.equal(false)
      expect(outcome.stdout).to.match(/^git version/)
    })
  }

  for (const sandbox of ['copy', 'bwrap'] as const) {
    it(`runs the system's programs, never ones the candidate planted in a directory of the workspace named absolutely on PATH, as npx puts <workspace>/node_modules/.bin (${sandbox})`, async function () {
      if (sandbox === 'bwrap' && !await findOnPath('bwrap')) {
        if (process.env.CI) throw new Error('bubblewrap (bwrap) must be installed in CI: .ci/run installs it')
        this.skip()
      }
      const markers = await mkdtemp(join(tmpdir(), 'taskward-markers-'))
      cleanup.push(markers)
      // Run by the host itself, a planted bwrap would run the check outside any sandbox.
      const planted = (name: string) => `#!/bin/sh\ntouch '${join(markers, name)}'\necho PLANTED-RAN\nexit 0\n`
      const cwd = await tempWorkspace({ 'node_modules/.bin/bwrap': planted('bwrap'), 'node_modules/.bin/env': planted('env'), 'node_modules/.bin/sh': planted('sh'), 'README.md': '# x\n' })
      cleanup.push(cwd)
      for (const name of ['bwrap', 'env', 'sh']) await chmod(join(cwd, 'node_modules/.bin', name), 0o755)
      process.env.PATH = [join(cwd, 'node_modules/.bin'), saved].join(delimiter)
      host = await bootRecovery({ sandbox })
      const { session, task } = await readyTask(host, cwd, [
        { id: 'shadowed', argv: ['sh', '-c', 'echo GENUINE; echo "PATH=$PATH"'], timeoutMs: 20_000 },
      ])
      const [shadowed] = (await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })).checks
      expect(shadowed.outputExcerpt).to.include('GENUINE').and.not.include('PLANTED-RAN')
      expect(/PATH=(.*)/.exec(shadowed.outputExcerpt ?? '')![1].split(delimiter)).to.not.include(join(cwd, 'node_modules/.bin'))
      expect(existsSync(join(markers, 'bwrap')) || existsSync(join(markers, 'env')) || existsSync(join(markers, 'sh'))).to.equal(false)
    })
  }

  it('warns once at start naming the dropped entries and what to use instead', async () => {
    const warnings: string[] = []
    const target: Logger.Target = { record: (record) => { if (record.type === 'warn') warnings.push(record.content) }, levels: { base: 2 } }
    Logger.targets.push(target)
    try {
      process.env.PATH = ['node_modules/.bin', saved, '.'].join(delimiter)
      host = await bootRecovery({ sandbox: 'copy' })
      await host.ctx.recovery.sandbox()
      const relatives = warnings.filter((text) => /relative/.test(text))
      expect(relatives).to.have.length(1)
      expect(relatives[0]).to.include('"node_modules/.bin"').and.include('"."').and.match(/absolute/).and.include('./node_modules/.bin/')
      await host.dispose()
      host = undefined
      warnings.length = 0
      process.env.PATH = saved
      host = await bootRecovery({ sandbox: 'copy' })
      await host.ctx.recovery.sandbox()
      expect(warnings.filter((text) => /relative/.test(text))).to.deep.equal([])
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
  })
})

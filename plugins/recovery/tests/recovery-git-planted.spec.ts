import { expect } from 'chai'
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { removeTree, type TestHost } from '@taskward/testkit'
import { ANSWER_CHECK, answerWorkspace, bootRecovery, readyTask, setAnswer } from './fixtures'
import { runGit } from '../src/git'

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Taskward Test', '-c', 'user.email=test@taskward.invalid', '-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', ...args],
    { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } }).trim()
}

/** One planted command: a script that leaves a marker named after its kind, and passes stdin through. */
function plant(cwd: string, markers: string, kind: string): string {
  const script = join(cwd, '.git', `evil-${kind}`)
  writeFileSync(script, `#!/bin/sh\ntouch '${join(markers, kind)}'\ncat\n`)
  chmodSync(script, 0o755)
  return script
}

/**
 * Commands planted directly in .git (as a shell, not the write tool, would): the controller's own git
 * runs in the real workspace, outside any sandbox, so none of them may ever run.
 */
describe('recovery: git the controller runs ignores what the repository plants', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string
  let markers: string

  beforeEach(async () => {
    host = await bootRecovery({ candidateSource: 'git' })
    cwd = await answerWorkspace('right')
    markers = await mkdtemp(join(tmpdir(), 'taskward-markers-'))
    git(cwd, 'init', '-q', '-b', 'main')
    git(cwd, 'add', '-A')
    git(cwd, 'commit', '-q', '-m', 'right answer')
  })
  afterEach(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    await removeTree(cwd)
    await removeTree(markers)
  })

  const KINDS = ['fsmonitor', 'hook', 'hooks-path', 'pager', 'diff-external', 'filter-clean', 'filter-process', 'textconv', 'ssh']

  function plantAll() {
    const script = (kind: string) => plant(cwd, markers, kind)
    const hooksDir = join(cwd, '.git', 'evil-hooks')
    mkdirSync(hooksDir)
    mkdirSync(join(cwd, '.git', 'hooks'), { recursive: true })
    for (const [dir, kind] of [[join(cwd, '.git', 'hooks'), 'hook'], [hooksDir, 'hooks-path']]) {
      for (const hook of ['post-index-change', 'post-checkout', 'reference-transaction', 'pre-auto-gc']) {
        writeFileSync(join(dir, hook), `#!/bin/sh\ntouch '${join(markers, kind)}'\n`)
        chmodSync(join(dir, hook), 0o755)
      }
    }
    writeFileSync(join(cwd, '.git', 'config'), [
      '[core]', '\trepositoryformatversion = 0', '\tfilemode = true', '\tbare = false',
      `\tfsmonitor = ${script('fsmonitor')}`, `\thooksPath = ${hooksDir}`, `\tpager = ${script('pager')}`,
      `\tsshCommand = ${script('ssh')}`,
      '[diff]', `\texternal = ${script('diff-external')}`,
      '[filter "evil"]', `\tclean = ${script('filter-clean')}`, `\tsmudge = ${script('filter-clean')}`, '\trequired = true',
      '[filter "proc"]', `\tprocess = ${script('filter-process')}`,
      '[diff "evil"]', `\ttextconv = ${script('textconv')}`, `\tcommand = ${script('textconv')}`,
      '[pager]', `\tstatus = ${script('pager')}`,
      '',
    ].join('\n'))
    mkdirSync(join(cwd, '.git', 'info'), { recursive: true })
    writeFileSync(join(cwd, '.git', 'info', 'attributes'), '*.txt filter=evil diff=evil\n')
    // The working tree's own .gitattributes (which the write tool may write) selects drivers too.
    writeFileSync(join(cwd, '.gitattributes'), '*.md filter=proc diff=evil\n')
    // A changed mtime with the same size makes git compare contents (through the clean filter).
    const future = new Date(Date.now() + 3_600_000)
    utimesSync(join(cwd, 'answer.txt'), future, future)
    utimesSync(join(cwd, 'README.md'), future, future)
  }

  it('runs no planted fsmonitor, hook, pager, external diff, filter, textconv or ssh command on the candidate path', async () => {
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    plantAll()
    const clean = await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(clean.verdict).to.equal('PASS')
    expect(clean.candidate.source).to.equal('git')
    expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'COMPLETE' })
    // A dirty tree and a new commit: status, rev-parse and merge-base all run again.
    await setAnswer(cwd, 'right\n')
    // Committed through the same neutralised git: a plain git here would fire the plants itself.
    const identity = ['-c', 'user.name=Taskward Test', '-c', 'user.email=test@taskward.invalid', '-c', 'commit.gpgsign=false']
    expect((await runGit(cwd, [...identity, 'add', '-A'])).status).to.equal(0)
    expect((await runGit(cwd, [...identity, 'commit', '-q', '-m', 'newline'])).status).to.equal(0)
    await setAnswer(cwd, 'wrong')
    const dirty = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(dirty.verdict).to.equal('FAIL')
    expect(dirty.legal).to.equal(true)
    expect(readdirSync(markers)).to.deep.equal([])
  })

  it('the git helper itself neutralises each planted kind (including diff, which the controller does not run)', async () => {
    plantAll()
    await setAnswer(cwd, 'changed')
    for (const args of [['status', '--porcelain', '--untracked-files=all'], ['diff'], ['diff', 'HEAD'], ['log', '-p', '-1'], ['rev-parse', 'HEAD']]) {
      const outcome = await runGit(cwd, args)
      expect(outcome.status, `git ${args.join(' ')}: ${outcome.message}`).to.equal(0)
    }
    expect(readdirSync(markers)).to.deep.equal([])
    // The plants are live: git run plainly in the same repository fires them.
    execFileSync('git', ['status', '--porcelain'], { cwd, stdio: 'ignore', env: { PATH: process.env.PATH } })
    expect(existsSync(join(markers, 'fsmonitor'))).to.equal(true)
  })
})

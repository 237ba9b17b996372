import { expect } from 'chai'
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { LineMatcher } from '../src/tools/grep'

/** The file tools attacked as a hostile model would: git directories, links, races, special files, regexes. */
describe('host: file tools hold against a hostile model', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string
  let outside: string
  let session: Session
  const run = (name: string, args: unknown): Promise<ToolResult> => host.ctx.tools.execute(session, name, args)

  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'src/a.ts': 'export const a = 1\n', '.git/config': '[core]\n\tbare = false\n', 'sub/.git/HEAD': 'ref: refs/heads/main\n' })
    outside = await tempWorkspace({ 'secret.txt': 'outside secret\n' })
    session = await host.ctx.sessions.create({ cwd })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
    await removeTree(outside)
  })

  describe('git directories', () => {
    it('refuses to write or edit anything inside a .git directory, at any depth and in any case', async () => {
      await mkdir(join(cwd, 'lower'), { recursive: true })
      for (const path of ['.git/config', '.git/hooks/post-index-change', 'sub/.git/hooks/x', '.Git/config', '.GIT/info/attributes',
        'lower/.git/config', '.git', 'sub/.git', '.git./config', 'src/../.git/config', '.g\u200bit/config', 'GIT~1/config']) {
        const written = await run('write', { path, content: '[core]\n\tfsmonitor = touch /tmp/pwned\n' })
        expect(written.error?.code, `write ${path}`).to.equal('PATH_FORBIDDEN')
        expect(written.error?.message).to.match(/\.git directory/)
        expect(written.error?.message).to.match(/working tree instead/)
      }
      expect((await run('edit', { path: '.git/config', old: 'bare = false', new: 'fsmonitor = touch /tmp/pwned' })).error?.code).to.equal('PATH_FORBIDDEN')
      expect(await readFile(join(cwd, '.git/config'), 'utf8')).to.equal('[core]\n\tbare = false\n')
      expect(existsSync(join(cwd, '.git/hooks'))).to.equal(false)
      expect(existsSync(join(cwd, 'sub/.git/hooks'))).to.equal(false)
      expect(existsSync(join(cwd, '.Git'))).to.equal(false)
    })

    it('refuses a .git directory reached through a symlink', async () => {
      await symlink(join(cwd, '.git'), join(cwd, 'plain'))
      await symlink(join(cwd, '.git', 'config'), join(cwd, 'config-link'))
      expect((await run('write', { path: 'plain/config', content: 'x' })).error?.code).to.equal('PATH_FORBIDDEN')
      expect((await run('write', { path: 'plain/hooks/pre-commit', content: 'x' })).error?.code).to.equal('PATH_FORBIDDEN')
      expect((await run('write', { path: 'config-link', content: 'x' })).error?.code).to.equal('PATH_FORBIDDEN')
      expect((await run('edit', { path: 'config-link', old: 'bare', new: 'x' })).error?.code).to.equal('PATH_FORBIDDEN')
      expect(await readFile(join(cwd, '.git/config'), 'utf8')).to.equal('[core]\n\tbare = false\n')
    })

    it('still writes files whose names only resemble .git', async () => {
      for (const path of ['.gitignore', '.gitattributes', 'x.git/config', '.github/workflows/ci.yml', 'git/config']) {
        expect((await run('write', { path, content: 'ok\n' })).error, path).to.equal(undefined)
      }
    })
  })
  describe('grep', () => {
    it('answers a catastrophic-backtracking pattern at once while the event loop keeps running', async () => {
      await writeFile(join(cwd, 'evil.txt'), `${'a'.repeat(40)}b\n${'a'.repeat(64)}\n`)
      let ticks = 0
      const ticker = setInterval(() => ticks++, 1)
      try {
        const outcome = await run('grep', { pattern: '^(a+)+$', include: 'evil.txt' })
        expect(outcome.error).to.equal(undefined)
        expect(outcome.result.matches).to.deep.equal([{ path: 'evil.txt', line: 2, text: 'a'.repeat(64) }])
        const outcome2 = await run('grep', { pattern: '(x+x+)+y', include: '**/*' })
        expect(outcome2.result.matches).to.deep.equal([])
      } finally {
        clearInterval(ticker)
      }
      expect(ticks).to.be.greaterThan(0)
    })

    it('refuses patterns it cannot run in linear time, or too long, with PATTERN_REJECTED', async () => {
      for (const pattern of ['(a)\\1', '(?=a)a', '(', 'a'.repeat(1001), '(a{1000}){1000}']) {
        const outcome = await run('grep', { pattern })
        expect(outcome.error?.code, pattern.slice(0, 20)).to.equal('PATTERN_REJECTED')
        expect(outcome.error?.message).to.match(/RE2 syntax|at most/)
      }
    })

    it('ends a search past its deadline with a coded refusal, and a cancelled one at once', async () => {
      // The deadline is counted from the start of the search: this one has passed before the first match.
      const late = new LineMatcher('x', { deadlineMs: 1 })
      await new Promise((resolve) => setTimeout(resolve, 50))
      const refused = await late.match('x\n', 10).then(() => undefined, (error) => error)
      expect(refused?.code).to.equal('PATTERN_REJECTED')
      expect(refused?.details).to.deep.equal({ reason: 'deadline' })
      expect(refused?.message).to.match(/did not finish/)

      // A cancel ends a match in flight: the worker is terminated, whatever it is doing.
      const abort = new AbortController()
      const cancelled = new LineMatcher('x', { signal: abort.signal })
      const pending = cancelled.match('x'.repeat(1 << 20), 10).then(() => undefined, (error) => error)
      abort.abort()
      expect((await pending)?.code).to.equal('ABORTED')
      // And one that runs to its end answers.
      const fine = new LineMatcher('b$')
      expect(await fine.match('a\nab\nb', 10)).to.deep.equal([[2, 'ab'], [3, 'b']])
      fine.close()
    })

    it('a turn cancelled while grep runs ends the search with ABORTED', async () => {
      await writeFile(join(cwd, 'big.txt'), 'x'.repeat(1 << 20))
      const abort = new AbortController()
      const started = host.ctx.tools.execute(session, 'grep', { pattern: '[xy][^a]{300}[ab]', include: 'big.txt' }, { signal: abort.signal })
      setTimeout(() => abort.abort(), 0)
      const outcome = await started
      expect(outcome.error?.code).to.equal('ABORTED')
    })
  })
})

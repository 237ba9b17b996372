import { expect } from 'chai'
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, lstatSync, readdirSync } from 'node:fs'
import { link, mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
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
  describe('links, races and special files', () => {
    it('refuses a hard-linked file for write, edit and read, and grep skips it; the outside inode stays unchanged', async () => {
      await link(join(outside, 'secret.txt'), join(cwd, 'linked.txt'))
      const write = await run('write', { path: 'linked.txt', content: 'pwned' })
      expect(write.error?.code).to.equal('FILE_UNSUPPORTED')
      expect(write.error?.message).to.match(/2 hard links/)
      expect((await run('edit', { path: 'linked.txt', old: 'outside', new: 'pwned' })).error?.code).to.equal('FILE_UNSUPPORTED')
      expect((await run('read', { path: 'linked.txt' })).error?.code).to.equal('FILE_UNSUPPORTED')
      const grep = await run('grep', { pattern: 'secret' })
      expect(grep.result.matches).to.deep.equal([])
      expect(grep.result.skipped).to.deep.equal(['linked.txt'])
      expect(await readFile(join(outside, 'secret.txt'), 'utf8')).to.equal('outside secret\n')
      // A hard link inside the cwd is refused the same way: the tools cannot tell where the other name is.
      await link(join(cwd, 'src/a.ts'), join(cwd, 'src/a-again.ts'))
      expect((await run('write', { path: 'src/a.ts', content: 'x' })).error?.code).to.equal('FILE_UNSUPPORTED')
      // A file written anew is an ordinary file again.
      expect((await run('write', { path: 'fresh.txt', content: 'ok' })).error).to.equal(undefined)
      expect((await run('edit', { path: 'fresh.txt', old: 'ok', new: 'fine' })).error).to.equal(undefined)
      expect((await run('read', { path: 'fresh.txt' })).result.content).to.equal('fine')
    })

    it('refuses a FIFO for write, edit and read at once, and grep skips it (nothing blocks)', async () => {
      execFileSync('mkfifo', [join(cwd, 'pipe')])
      execFileSync('mkfifo', [join(cwd, 'src', 'pipe.ts')])
      for (const [name, args] of [
        ['write', { path: 'pipe', content: 'x' }],
        ['edit', { path: 'pipe', old: 'a', new: 'b' }],
        ['read', { path: 'pipe' }],
        ['write', { path: 'src/pipe.ts', content: 'x' }],
      ] as const) {
        const outcome = await run(name, args)
        expect(outcome.error?.code, name).to.equal('FILE_UNSUPPORTED')
        expect(outcome.error?.message).to.match(/FIFO/)
      }
      const grep = await run('grep', { pattern: 'export' })
      expect(grep.result.matches.map((m: { path: string }) => m.path)).to.deep.equal(['src/a.ts'])
      expect(lstatSync(join(cwd, 'pipe')).isFIFO()).to.equal(true)
    })

    it('a symlink flipped between a directory inside and the outside while writes run never lands a write outside the cwd', async () => {
      const secret = join(outside, 'secret.txt')
      await mkdir(join(cwd, 'real'))
      await writeFile(join(cwd, 'real', 'secret.txt'), 'inside copy\n')
      await symlink(join(cwd, 'real'), join(cwd, 'flip'))
      // Another process swaps what cwd/flip leads to — the real directory or the outside — as fast as it
      // can; each swap is one atomic rename, so flip always exists.
      const flipper = spawn(process.execPath, ['-e', `
        const { renameSync, symlinkSync, rmSync } = require('node:fs')
        const [real, outside, flip] = process.argv.slice(1)
        const parent = process.ppid
        for (let i = 0; ; i++) {
          // Never outlive the suite (a killed mocha leaves it spinning a core otherwise).
          if (i % 1000 === 0 && process.ppid !== parent) process.exit()
          const next = flip + '.next'
          rmSync(next, { force: true })
          symlinkSync(i % 2 ? outside : real, next)
          renameSync(next, flip)
        }`, join(cwd, 'real'), outside, join(cwd, 'flip')], { stdio: 'ignore' })
      try {
        let inside = 0
        for (let i = 0; i < 300; i++) {
          const written = await run('write', { path: `flip/pwned-${i}.txt`, content: 'pwned' })
          const edited = await run('edit', { path: 'flip/secret.txt', old: 'secret', new: 'pwned' })
          if (!written.error || !edited.error) inside++
          for (const outcome of [written, edited]) {
            if (outcome.error) expect(outcome.error.code).to.be.oneOf(['PATH_OUTSIDE_WORKSPACE', 'NOT_FOUND', 'BAD_REQUEST'])
          }
        }
        expect(inside, 'some writes went through to the real directory').to.be.greaterThan(0)
      } finally {
        flipper.kill('SIGKILL')
      }
      expect(readdirSync(outside)).to.deep.equal(['secret.txt'])
      expect(await readFile(secret, 'utf8')).to.equal('outside secret\n')
    })
  })
})

import { expect } from 'chai'
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

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
})

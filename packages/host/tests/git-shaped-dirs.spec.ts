import { expect } from 'chai'
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A git directory is recognised by its shape (HEAD, objects/, refs/), not only by the name `.git`: an
 * embedded bare repository, or the directory a `.git` file's `gitdir:` names. Git runs the hooks and the
 * config commands of such a directory for whoever uses it — so the file tools must not write one.
 */
describe('host: file tools never write a git directory by another name', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string
  let session: Session
  const run = (name: string, args: unknown): Promise<ToolResult> => host.ctx.tools.execute(session, name, args)
  const PLANTED = '[core]\n\tfsmonitor = "touch /tmp/taskward-pwned"\n'

  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'src/a.ts': 'export const a = 1\n' })
    session = await host.ctx.sessions.create({ cwd })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('refuses the write that would complete an embedded bare repository, in any order, so git never takes it for one', async () => {
    for (const [dir, order] of [['vendor/a', ['HEAD', 'refs/heads/main', 'config', 'objects/info/packs']],
      ['vendor/b', ['objects/info/packs', 'refs/heads/main', 'HEAD']], ['vendor/c', ['refs/heads/main', 'objects/info/packs', 'HEAD']]] as const) {
      const outcomes = []
      for (const name of order) {
        const content = name === 'HEAD' ? 'ref: refs/heads/main\n' : name === 'config' ? PLANTED : '\n'
        outcomes.push((await run('write', { path: `${dir}/${name}`, content })).error?.code)
      }
      // Everything but the completing write lands; that one is refused and leaves nothing behind.
      expect(outcomes.slice(0, -1), dir).to.deep.equal(order.slice(0, -1).map(() => undefined))
      expect(outcomes.at(-1), dir).to.equal('PATH_FORBIDDEN')
      const [last] = order.at(-1)!.split('/')
      expect(existsSync(join(cwd, dir, last)), `${dir}/${last}`).to.equal(false)
      // git does not take the directory for a repository.
      let gitDir: string | undefined
      try {
        gitDir = execFileSync('git', ['rev-parse', '--absolute-git-dir'], {
          cwd: join(cwd, dir), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
          env: { PATH: process.env.PATH, GIT_CEILING_DIRECTORIES: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: cwd },
        }).trim()
      } catch {}
      expect(gitDir, dir).to.equal(undefined)
    }
  })

  it('refuses writes into the git directory a .git file points to, and into any complete bare repository', async () => {
    execFileSync('git', ['init', '-q', '--separate-git-dir', join(cwd, 'store'), cwd], { stdio: 'ignore', env: { PATH: process.env.PATH, HOME: cwd } })
    expect(await readFile(join(cwd, '.git'), 'utf8')).to.match(/^gitdir: /)
    for (const path of ['store/config', 'store/hooks/post-checkout', 'store/info/attributes', 'store/HEAD', './store/objects/x']) {
      const outcome = await run('write', { path, content: PLANTED })
      expect(outcome.error?.code, path).to.equal('PATH_FORBIDDEN')
    }
    expect(existsSync(join(cwd, 'store/hooks/post-checkout'))).to.equal(false)
    expect(await readFile(join(cwd, 'store/config'), 'utf8')).to.not.include('fsmonitor')
    expect((await run('edit', { path: 'store/config', old: '[core]', new: PLANTED })).error?.code).to.equal('PATH_FORBIDDEN')
    // Reading stays allowed.
    expect((await run('read', { path: 'store/HEAD' })).error).to.equal(undefined)
  })

  it('still writes files named HEAD, objects or refs where they do not make a git directory', async () => {
    for (const path of ['docs/HEAD', 'src/refs/index.ts', 'src/objects/index.ts', 'notes/refs/a.md', 'notes/HEAD']) {
      expect((await run('write', { path, content: 'ok\n' })).error, path).to.equal(undefined)
    }
  })
})

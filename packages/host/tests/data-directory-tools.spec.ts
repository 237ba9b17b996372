import { expect } from 'chai'
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * The Taskward data directory (`TASKWARD_DATA`, else ./data: the session database, the operator token)
 * may lie inside a session's cwd — a workspace root that contains it, or a session in the directory the
 * host runs from. The file tools must neither read nor write it; the workspaces kept under it stay usable.
 */
describe('host: file tools keep out of the data directory', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string
  let session: Session
  let saved: string | undefined
  const run = (name: string, args: unknown): Promise<ToolResult> => host.ctx.tools.execute(session, name, args)

  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'src/a.ts': 'export const a = 1\n' })
    saved = process.env.TASKWARD_DATA
    process.env.TASKWARD_DATA = join(cwd, 'var', 'taskward')
    await mkdir(join(cwd, 'var', 'taskward', 'workspaces', 'p'), { recursive: true })
    await writeFile(join(cwd, 'var', 'taskward', 'operator-token'), 'the operator token\n')
    await writeFile(join(cwd, 'var', 'taskward', 'workspaces', 'p', 'x.txt'), 'workspace file\n')
    session = await host.ctx.sessions.create({ cwd })
  })
  afterEach(async () => {
    if (saved === undefined) delete process.env.TASKWARD_DATA
    else process.env.TASKWARD_DATA = saved
    await host.dispose()
    await removeTree(cwd)
  })

  it('refuses read, write and edit inside a data directory within the cwd (also through a symlink), and grep skips it', async () => {
    await symlink('var/taskward', join(cwd, 'state'))
    for (const path of ['var/taskward/operator-token', './var/taskward/operator-token', 'state/operator-token']) {
      const read = await run('read', { path })
      expect(read.error?.code, `read ${path}`).to.equal('PATH_FORBIDDEN')
      expect(read.error?.message).to.match(/data directory/)
      expect((await run('write', { path, content: 'x' })).error?.code, `write ${path}`).to.equal('PATH_FORBIDDEN')
      expect((await run('edit', { path, old: 'operator', new: 'x' })).error?.code, `edit ${path}`).to.equal('PATH_FORBIDDEN')
    }
    expect((await run('write', { path: 'var/taskward/new.db', content: 'x' })).error?.code).to.equal('PATH_FORBIDDEN')
    expect(await readFile(join(cwd, 'var', 'taskward', 'operator-token'), 'utf8')).to.equal('the operator token\n')
    const grep = await run('grep', { pattern: 'token', include: '**/*' })
    expect(grep.result.matches).to.deep.equal([])
    expect((await run('write', { path: 'src/b.ts', content: 'ok\n' })).error).to.equal(undefined)
  })

  it('a session whose cwd lies inside the data directory (the workspaces and the demo kept there) works as usual', async () => {
    const inner = await host.ctx.sessions.create({ cwd: join(cwd, 'var', 'taskward', 'workspaces', 'p') })
    expect((await host.ctx.tools.execute(inner, 'read', { path: 'x.txt' })).result?.content).to.equal('workspace file\n')
    expect((await host.ctx.tools.execute(inner, 'write', { path: 'y.txt', content: 'ok' })).error).to.equal(undefined)
    // A session in the data directory itself is refused its files.
    const top = await host.ctx.sessions.create({ cwd: join(cwd, 'var', 'taskward') })
    expect((await host.ctx.tools.execute(top, 'read', { path: 'operator-token' })).error?.code).to.equal('PATH_FORBIDDEN')
  })
})

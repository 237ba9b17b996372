import { expect } from 'chai'
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { listFiles } from '../src/tools/glob'

/**
 * A glob pattern from a model is compiled to a backtracking JavaScript regular expression (picomatch):
 * `*a*a*a*a*!` against a file name of 200 `a`s (which the model can create with `write`) blocked the
 * event loop for ~30 s, and each further `*a` multiplies that. The `glob` tool and grep's `include` must
 * stay interruptible and bounded.
 */
describe('host: glob patterns from a model are bounded', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string
  let session: Session
  const run = (name: string, args: unknown, signal?: AbortSignal): Promise<ToolResult> => host.ctx.tools.execute(session, name, args, { signal })

  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'src/a.ts': 'export const a = 1\n' })
    await writeFile(join(cwd, 'a'.repeat(200)), 'x\n')
    session = await host.ctx.sessions.create({ cwd })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  for (const tool of ['glob', 'grep']) {
    it(`a cancelled ${tool} with a backtracking glob ends with ABORTED while the event loop keeps running`, async () => {
      const abort = new AbortController()
      const args = tool === 'glob' ? { pattern: '*a*a*a*a*a*a*a*!' } : { pattern: 'x', include: '*a*a*a*a*a*a*a*!' }
      const started = run(tool, args, abort.signal)
      // A blocked event loop would never get here before the glob ended on its own.
      setTimeout(() => abort.abort(), 50)
      const outcome = await started
      expect(outcome.error?.code).to.equal('ABORTED')
    })
  }

  it('a glob past its deadline is refused with PATTERN_REJECTED (reason deadline)', async () => {
    const refused = await listFiles(cwd, '*a*a*a*a*a*a*a*a*!', { deadlineMs: 200 }).then(() => undefined, (error) => error)
    expect(refused?.code).to.equal('PATTERN_REJECTED')
    expect(refused?.details).to.deep.equal({ reason: 'deadline' })
    expect(refused?.message).to.match(/did not finish/)
  })

  it('refuses an overlong pattern with PATTERN_REJECTED, and still lists files', async () => {
    expect((await run('glob', { pattern: 'a'.repeat(70_000) })).error?.code).to.equal('PATTERN_REJECTED')
    expect((await run('grep', { pattern: 'x', include: 'a'.repeat(70_000) })).error?.code).to.equal('PATTERN_REJECTED')
    const listed = await run('glob', { pattern: 'src/**/*.ts' })
    expect(listed.result).to.deep.equal({ files: ['src/a.ts'] })
    expect((await run('glob', { pattern: '../**' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
  })
})

import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { useToolWorkspace } from './tool-workspace'

/**
 * A path is opened one directory at a time, each held open until the file is: a model's path of
 * thousands of components made thousands of directories and held as many descriptors (toward the
 * process limit, which the database and the server share); an overlong name failed as TOOL_FAILED.
 */
describe('host: file tool paths are bounded', function () {
  this.timeout(60_000)
  const workspace = useToolWorkspace({ 'src/a.ts': 'x\n' })
  const run = workspace.run

  it('refuses a path nested too deep before creating anything, and an overlong name, with TOOL_INVALID_ARGS', async () => {
    const deep = await run('write', { path: `${'q/'.repeat(300)}f`, content: 'x' })
    expect(deep.error?.code).to.equal('TOOL_INVALID_ARGS')
    expect(deep.error?.message).to.match(/deeper than/)
    expect(existsSync(join(workspace.cwd, 'q'))).to.equal(false)
    for (const name of ['read', 'write']) {
      const long = await run(name, { path: 'a'.repeat(300), content: 'x' })
      expect(long.error?.code, name).to.equal('TOOL_INVALID_ARGS')
    }
    const huge = await run('read', { path: 'a/'.repeat(5000) })
    expect(huge.error?.code).to.equal('TOOL_INVALID_ARGS')
    // Ordinary depth still works.
    expect((await run('write', { path: `${'d/'.repeat(40)}f.txt`, content: 'ok' })).error).to.equal(undefined)
  })
})

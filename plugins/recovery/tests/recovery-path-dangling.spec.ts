import { expect } from 'chai'
import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { removeTree, tempWorkspace } from '@taskward/testkit'
import { checkPath } from '../src/sandbox'
import { whichAll } from '../src/launcher'

/*
 * Review (issue 30, point 4; the check's PATH as a trust boundary). An absolute PATH entry that is a
 * symlink into the workspace is left out — when the link resolves. A link whose target does not exist
 * (yet) fails realpath, is judged by its written name only, and is kept: the candidate (a background
 * process the agent started) creates the target between the PATH being worked out and the lookup/exec,
 * and its `git` (or `bwrap`, which the host itself runs outside any sandbox) is found there first.
 * Pre-existing (not introduced by realpathSync.native, which fails on a dangling link just the same).
 */
describe('recovery: a check\'s PATH and a dangling symlink into the workspace', () => {
  const cleanup: string[] = []
  afterEach(async () => { for (const dir of cleanup.splice(0)) await removeTree(dir) })

  it('leaves out an entry that is a symlink into the workspace even while its target is missing', async () => {
    const cwd = await tempWorkspace()
    const outside = await mkdtemp(join(tmpdir(), 'taskward-path-link-'))
    cleanup.push(cwd, outside)
    const entry = join(outside, 'tools')
    await symlink(join(cwd, 'tools'), entry) // the operator's PATH names it; the directory is not there yet
    const path = checkPath([entry, '/usr/bin', '/bin'].join(delimiter), cwd)
    // What the candidate can do once the PATH was worked out: create the target with its own program.
    await mkdir(join(cwd, 'tools'))
    await writeFile(join(cwd, 'tools', 'git'), '#!/bin/sh\necho planted\n', { mode: 0o755 })
    const [git] = await whichAll(['git'], path)
    expect(git, 'the planted git is found through the kept entry').to.not.equal(join(entry, 'git'))
    expect(path.split(delimiter)).to.not.include(entry)
  })
})

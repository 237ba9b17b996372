import { expect } from 'chai'
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
// @ts-expect-error plain ESM script without types
import { checkCache, dshDir, DSH_VERSION, NODE_VERSION } from '../scripts/dsh/install.mjs'

/*
 * The DSH install cache is reused only after checks (scripts/dsh/install.mjs): a directory that is a
 * symlink to another install, or that others may write, is not reused, whatever its marker says.
 */
describe('DSH install cache: a hostile cache directory is not reused', () => {
  let root: string
  beforeEach(async () => { root = await mkdtemp(join(tmpdir(), 'taskward-dsh-cache-')) })
  afterEach(() => rm(root, { recursive: true, force: true }))

  it('refuses a cache directory that is a symlink, even to a complete install', async function () {
    if (checkCache(dshDir())) return this.skip()
    const link = join(root, 'dsh-link')
    await symlink(dshDir(), link)
    expect(checkCache(link)).to.equal('the cache directory is a symlink')
  })

  it('refuses a cache directory others may write, before reading its marker', async () => {
    const dir = join(root, 'dsh-shared')
    await mkdir(dir)
    await writeFile(join(dir, 'taskward-dsh-cache.json'), JSON.stringify({ dsh: DSH_VERSION, node: NODE_VERSION }))
    await chmod(dir, 0o777)
    expect(checkCache(dir)).to.equal('the cache directory is writable by others')
    await chmod(dir, 0o755)
    expect(checkCache(dir)).to.equal('the Node binary is missing')
    expect(existsSync(dir)).to.equal(true)
  })
})

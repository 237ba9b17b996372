import { expect } from 'chai'
import { spawnSync } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
// @ts-expect-error plain ESM script without types
import { checkNode, DEFAULT_NODE, integrityOf, nodeDir, nodePaths, PINNED_NODES, unpackVerified } from '../scripts/test-node.mjs'
// @ts-expect-error plain ESM script without types
import { NODE_VERSION } from '../scripts/dsh/install.mjs'

/*
 * The Node that `npm test` runs the suite on a second time (scripts/test-node.mjs): a tarball is
 * unpacked only when it matches its pinned integrity, and an installed directory is reused only after
 * checks — including, as root, that `nobody` can run it (the permission cases run children as nobody).
 */
describe('the second-run Node (scripts/test-node.mjs)', () => {
  let root: string
  beforeEach(async () => { root = await mkdtemp(join(tmpdir(), 'taskward-test-node-')) })
  afterEach(() => rm(root, { recursive: true, force: true }))

  /** A real gzipped tarball laid out as the registry's (package/bin/node). */
  async function tarball(): Promise<string> {
    await mkdir(join(root, 'src/package/bin'), { recursive: true })
    await writeFile(join(root, 'src/package/bin/node'), '#!/bin/sh\necho v0.0.0\n', { mode: 0o755 })
    const file = join(root, 'node.tgz')
    const tar = spawnSync('tar', ['-czf', file, '-C', join(root, 'src'), 'package'])
    expect(tar.status).to.equal(0)
    return file
  }

  it('runs on the Node DSH runs on by default, and that release is pinned', () => {
    expect(DEFAULT_NODE).to.equal(NODE_VERSION)
    expect(DEFAULT_NODE).to.match(/^24\./)
    expect(PINNED_NODES[DEFAULT_NODE]).to.match(/^sha512-[A-Za-z0-9+/]{86}==$/)
  })

  it('refuses a tarball that does not match its pinned integrity, and unpacks nothing', async () => {
    const file = await tarball()
    const dest = join(root, 'node')
    expect(() => unpackVerified(file, DEFAULT_NODE, dest)).to.throw(/does not match its pinned integrity/)
    expect(existsSync(dest)).to.equal(false)
  })

  it('refuses a version that is not pinned before looking at the tarball', async () => {
    const file = await tarball()
    expect(() => unpackVerified(file, '0.0.0', join(root, 'node'))).to.throw(/Node 0\.0\.0 is not pinned/)
    expect(integrityOf(file)).to.match(/^sha512-/)
  })

  it('does not reuse a directory that is a symlink, writable by others, or marked for another release', async () => {
    const dir = join(root, 'node-shared')
    await mkdir(join(dir, 'bin'), { recursive: true })
    expect(checkNode(join(root, 'absent'))).to.equal('not installed')
    await symlink(dir, join(root, 'link'))
    expect(checkNode(join(root, 'link'))).to.equal('the cache directory is a symlink')
    await chmod(dir, 0o777)
    expect(checkNode(dir)).to.equal('the cache directory is writable by others')
    await chmod(dir, 0o755)
    expect(checkNode(dir)).to.equal('no completed-install marker')
    await writeFile(nodePaths(dir).marker, JSON.stringify({ version: '22.23.5', integrity: PINNED_NODES['22.23.5'] }))
    expect(checkNode(dir, DEFAULT_NODE)).to.match(/^the marker names Node 22\.23\.5/)
    await writeFile(nodePaths(dir).marker, JSON.stringify({ version: DEFAULT_NODE, integrity: PINNED_NODES[DEFAULT_NODE] }))
    expect(checkNode(dir, DEFAULT_NODE)).to.equal('the Node binary is missing')
  })

  it('as root, does not reuse an install that nobody can run (under a mode-700 directory, as root\'s home is)', async function () {
    const installed = nodeDir(DEFAULT_NODE)
    if (process.getuid?.() !== 0 || checkNode(installed, DEFAULT_NODE)) return this.skip()
    const closed = join(root, 'closed')
    const dir = join(closed, `node-${DEFAULT_NODE}-linux-x64`)
    await mkdir(join(dir, 'bin'), { recursive: true })
    await symlink(nodePaths(installed).node, nodePaths(dir).node)
    await writeFile(nodePaths(dir).marker, JSON.stringify({ version: DEFAULT_NODE, integrity: PINNED_NODES[DEFAULT_NODE] }))
    await chmod(root, 0o755)
    await chmod(closed, 0o755)
    expect(checkNode(dir, DEFAULT_NODE)).to.equal(undefined)
    await chmod(closed, 0o700)
    expect(checkNode(dir, DEFAULT_NODE)).to.match(/^user 65534 cannot run .* \(EACCES\): a directory above it is closed to other users/)
  })
})

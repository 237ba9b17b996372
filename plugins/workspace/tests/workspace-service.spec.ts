import { createHash } from 'node:crypto'
import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import { TaskwardError } from '@taskward/protocol'
import WorkspacePlugin, { Config, WorkspaceService } from '../src'
import { makeTempDir, pinTimes, removeTree, writeTree } from './fixtures'

describe('workspace service (cordis)', () => {
  let root: string

  beforeEach(() => {
    root = makeTempDir()
    writeTree(root, { 'a.txt': 'alpha', 'z/b.txt': 'beta', 'z/empty/': '', 'B.txt': 'upper', 'é.txt': 'accent', '.git/HEAD': 'x' })
  })

  afterEach(() => removeTree(root))

  it('provides ctx.workspace once the plugin is applied and removes it on dispose', async () => {
    const ctx = new Context()
    const fork = ctx.plugin(WorkspacePlugin, { repairMaxFiles: 50 })
    await ctx.start()
    expect(ctx.workspace).to.be.instanceOf(WorkspaceService)
    expect(ctx.workspace.limits().entries.value).to.equal(50)
    const stamp = await ctx.workspace.stamp(root)
    expect(stamp.files).to.equal(4)
    fork.dispose()
    expect(ctx.get('workspace')).to.equal(undefined)
    await ctx.stop()
  })

  it('is injectable into another plugin', async () => {
    const ctx = new Context()
    let applied!: (digest: Promise<string>) => void
    const seen = new Promise<Promise<string>>((resolve) => { applied = resolve })
    ctx.plugin({
      name: 'consumer',
      inject: ['workspace'],
      apply(inner: Context) {
        applied(inner.workspace.stamp(root).then((stamp) => stamp.digest))
      },
    })
    ctx.plugin(WorkspacePlugin)
    await ctx.start()
    expect(await await seen).to.match(/^[0-9a-f]{64}$/)
    await ctx.stop()
  })

  it('exports a Config schema with the documented defaults', () => {
    expect(Config({})).to.deep.equal({
      repairMaxFiles: 10000,
      repairMaxBytes: 256 * 1024 * 1024,
      dependencyDirectories: ['node_modules', '.yarn/cache', '.yarn/unplugged', '.pnpm-store', '.venv', 'venv', '__pypackages__', '.tox', 'bower_components'],
      dependencyMaxEntries: 1_000_000,
      dependencyMaxBytes: 16 * 1024 ** 3,
      statCache: true,
    })
    expect(() => Config({ repairMaxBytes: 0 })).to.throw(/repairMaxBytes/)
  })

  it('refuses a bad config when constructed directly (CONFIG_INVALID), before registering', () => {
    const ctx = new Context()
    let caught: unknown
    try {
      new WorkspaceService(ctx, { repairMaxFiles: 0 })
    } catch (error) {
      caught = error
    }
    expect(TaskwardError.is(caught, 'CONFIG_INVALID')).to.equal(true)
    expect((caught as TaskwardError).details).to.include({ key: 'repairMaxFiles', value: 0 })
    expect(ctx.get('workspace')).to.equal(undefined)
  })

  it('matches an independent implementation of the framing in docs/workspace.md', async () => {
    // Links (inside, outside, dangling) and a dependency directory, as an installed project has them.
    writeTree(root, { 'node_modules/pkg/index.js': 'module.exports = 1', 'node_modules/.bin/': '' })
    symlinkSync('../pkg/index.js', join(root, 'node_modules/.bin/pkg'))
    symlinkSync('/usr/bin/env', join(root, 'z/outside'))
    symlinkSync('nowhere', join(root, 'dangling'))
    const ctx = new Context()
    ctx.plugin(WorkspacePlugin)
    await ctx.start()
    const stamp = await ctx.workspace.stamp(root)
    await ctx.stop()

    // Written from the document, not from the plugin: byte-order names, pre-order, root .git skipped.
    const u32 = (n: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b }
    const u64 = (n: bigint) => { const b = Buffer.alloc(8); b.writeBigUInt64BE(n); return b }
    const i64 = (n: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64BE(n); return b }
    const hash = createHash('sha256').update('taskward-workspace-digest v1\n')
    let files = 0
    let bytes = 0
    let links = 0
    const visit = (dir: Buffer, rel: Buffer | null) => {
      const names = readdirSync(dir, { encoding: 'buffer' })
        .filter((name) => rel !== null || name.toString() !== '.git')
        .sort(Buffer.compare)
      for (const name of names) {
        const path = rel ? Buffer.concat([rel, Buffer.from('/'), name]) : name
        const abs = Buffer.concat([dir, Buffer.from('/'), name])
        const st = lstatSync(abs, { bigint: true })
        const head = [u32(path.length), path, u32(Number(st.mode & 0o7777n)), i64(st.mtimeNs)]
        if (st.isSymbolicLink()) {
          const target = readlinkSync(abs, { encoding: 'buffer' })
          links++
          hash.update(Buffer.concat([Buffer.from('L'), u32(path.length), path, u32(target.length), target]))
        } else if (st.isDirectory()) {
          hash.update(Buffer.concat([Buffer.from('D'), ...head]))
          visit(abs, path)
        } else {
          const content = readFileSync(abs)
          files++
          bytes += content.length
          hash.update(Buffer.concat([Buffer.from('F'), ...head, u64(st.size), createHash('sha256').update(content).digest()]))
        }
      }
    }
    const real = realpathSync(root, { encoding: 'buffer' })
    visit(real, null)
    const rootStat = lstatSync(real, { bigint: true })
    const key = createHash('sha256').update('taskward-workspace-key v1\n')
      .update(Buffer.concat([u32(real.length), real, u64(rootStat.dev), u64(rootStat.ino)])).digest('hex')
    const dependencies = { entries: 5, files: 1, bytes: 'module.exports = 1'.length, links: 1 }
    expect(stamp).to.deep.equal({ workspaceKey: key, digest: hash.digest('hex'), files, bytes, links, dependencies })
    expect(links).to.equal(3)
  })

  it('hashes names by their bytes, even when they are not valid UTF-8', async () => {
    const ctx = new Context()
    ctx.plugin(WorkspacePlugin)
    await ctx.start()
    const twin = makeTempDir()
    try {
      // Both names decode to "f\uFFFD"; only their bytes tell them apart.
      writeFileSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0x66, 0xff])]), 'same')
      writeFileSync(Buffer.concat([Buffer.from(`${twin}/`), Buffer.from([0x66, 0xfe])]), 'same')
      for (const dir of [root, twin]) removeTree(join(dir, '.git'))
      removeTree(join(root, 'a.txt'))
      removeTree(join(root, 'B.txt'))
      removeTree(join(root, 'é.txt'))
      removeTree(join(root, 'z'))
      pinTimes(root)
      pinTimes(twin)
      const a = await ctx.workspace.stamp(root)
      const b = await ctx.workspace.stamp(twin)
      expect(a.files).to.equal(1)
      expect(b.files).to.equal(1)
      expect(a.digest).to.not.equal(b.digest)
    } finally {
      removeTree(twin)
      await ctx.stop()
    }
  })
})

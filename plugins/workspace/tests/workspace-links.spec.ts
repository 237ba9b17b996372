import { execFileSync } from 'node:child_process'
import { mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { makeTempDir, pinTimes, rejectsWith, removeTree, startWorkspace, writeTree } from './fixtures'

/** The dependency policy (docs/workspace.md): links are recorded as links, never followed. */
describe('workspace stamp: symbolic links', () => {
  let ctx: Context
  let root: string

  beforeEach(async () => {
    ctx = await startWorkspace()
    root = makeTempDir()
    writeTree(root, { 'a.txt': 'a', 'src/b.txt': 'b' })
  })

  afterEach(async () => {
    await ctx.stop()
    removeTree(root)
  })

  it('stamps links inside, outside and dangling, counting them and never reading through them', async () => {
    const outside = makeTempDir()
    try {
      writeTree(outside, { 'secret.txt': 'x'.repeat(1000), 'deep/more.txt': 'y' })
      symlinkSync('../a.txt', join(root, 'src/inside-link'))
      symlinkSync(outside, join(root, 'escape'))
      symlinkSync(join(root, 'nowhere'), join(root, 'dangling'))
      const stamp = await ctx.workspace.stamp(root)
      // Only the two regular files: nothing behind a link is walked or hashed.
      expect(stamp).to.include({ files: 2, bytes: 2, links: 3 })
    } finally {
      removeTree(outside)
    }
  })

  it('never opens what a link points to: a FIFO or an endless device behind one cannot hang the stamp', async () => {
    const outside = makeTempDir()
    try {
      execFileSync('mkfifo', [join(outside, 'pipe')])
      symlinkSync(join(outside, 'pipe'), join(root, 'to-fifo'))
      symlinkSync('/dev/zero', join(root, 'to-zero'))
      const stamp = await ctx.workspace.stamp(root)
      expect(stamp).to.include({ files: 2, links: 2 })
    } finally {
      removeTree(outside)
    }
  })

  it('changes the digest when a link is added, removed or retargeted, and not when it is recreated alike', async () => {
    pinTimes(root)
    const plain = (await ctx.workspace.stamp(root)).digest
    symlinkSync('b.txt', join(root, 'src/link'))
    pinTimes(root)
    const linked = (await ctx.workspace.stamp(root)).digest
    expect(linked).to.not.equal(plain)

    unlinkSync(join(root, 'src/link'))
    symlinkSync('b.txt', join(root, 'src/link'))
    pinTimes(root)
    expect((await ctx.workspace.stamp(root)).digest, 'recreated with the same target').to.equal(linked)

    unlinkSync(join(root, 'src/link'))
    symlinkSync('../a.txt', join(root, 'src/link'))
    pinTimes(root)
    const retargeted = (await ctx.workspace.stamp(root)).digest
    expect(retargeted).to.not.equal(linked)
    expect(retargeted).to.not.equal(plain)

    unlinkSync(join(root, 'src/link'))
    pinTimes(root)
    expect((await ctx.workspace.stamp(root)).digest, 'removed again').to.equal(plain)
  })

  it('tells a link from a file holding its target text', async () => {
    symlinkSync('a.txt', join(root, 'x'))
    pinTimes(root)
    const asLink = await ctx.workspace.stamp(root)
    unlinkSync(join(root, 'x'))
    writeFileSync(join(root, 'x'), 'a.txt')
    pinTimes(root)
    const asFile = await ctx.workspace.stamp(root)
    expect(asFile.digest).to.not.equal(asLink.digest)
  })

  it('still refuses a FIFO (special files stay ARTIFACT_UNSUPPORTED)', async () => {
    symlinkSync('a.txt', join(root, 'fine-link'))
    execFileSync('mkfifo', [join(root, 'src/pipe')])
    const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_UNSUPPORTED')
    expect(error.details).to.include({ path: 'src/pipe', type: 'FIFO (named pipe)' })
  })

  it('fails ARTIFACT_CHANGED, not a wrong digest, when a link is swapped for a file while stamps run', async () => {
    symlinkSync('a.txt', join(root, 'flip'))
    let stop = false
    const flipper = (async () => {
      for (let i = 0; !stop; i++) {
        const next = join(root, `.flip-${i}`)
        if (i % 2) writeFileSync(next, 'a.txt')
        else symlinkSync('a.txt', next)
        renameSync(next, join(root, 'flip'))
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    const outcomes = new Set<string>()
    try {
      for (let i = 0; i < 30; i++) {
        outcomes.add(await ctx.workspace.stamp(root).then(() => 'stamped', (error) => error.code))
      }
    } finally {
      stop = true
      await flipper
    }
    // Whatever each stamp saw, it either agreed with itself or said the tree changed.
    expect([...outcomes].every((outcome) => outcome === 'stamped' || outcome === 'ARTIFACT_CHANGED'), [...outcomes].join()).to.equal(true)
  })
})

describe('workspace stamp: dependency directories', () => {
  let ctx: Context | undefined
  let root: string

  beforeEach(() => {
    root = makeTempDir()
    writeTree(root, { 'package.json': '{}', 'src/index.ts': 'export {}' })
  })

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
    removeTree(root)
  })

  /** `count` files in `dir` (below root), spread over subdirectories of 100. */
  const manyFiles = (dir: string, count: number) => {
    for (let i = 0; i < count; i++) {
      const sub = join(root, dir, `pkg${Math.floor(i / 100)}`)
      if (i % 100 === 0) mkdirSync(sub, { recursive: true })
      writeFileSync(join(sub, `f${i}.js`), '')
    }
  }

  it('stamps a dependency tree past the workspace limit under its own limit, and shows the counts apart', async () => {
    ctx = await startWorkspace({ repairMaxFiles: 50 })
    manyFiles('node_modules', 300)
    mkdirSync(join(root, 'node_modules/.bin'))
    symlinkSync('../pkg0/f0.js', join(root, 'node_modules/.bin/tool'))
    const stamp = await ctx.workspace.stamp(root)
    // 300 files, 3 package directories, node_modules, .bin and the link.
    expect(stamp.dependencies).to.deep.equal({ entries: 306, files: 300, bytes: 0, links: 1 })
    expect(stamp).to.include({ files: 302, links: 1 })
  })

  it('fails explicitly past the dependency limits, naming the config key', async () => {
    ctx = await startWorkspace({ dependencyMaxEntries: 20 })
    manyFiles('node_modules', 30)
    const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_LIMIT')
    expect(error.details).to.include({ limit: 'dependencyEntries', value: 20, configKey: 'dependencyMaxEntries', source: 'config' })
    expect(error.message).to.contain('dependencyMaxEntries')

    writeTree(root, { 'node_modules/big.bin': Buffer.alloc(4096) })
    const bytes = await rejectsWith(ctx.workspace.stamp(root, { maxDependencyEntries: 1000, maxDependencyBytes: 1024 }), 'ARTIFACT_LIMIT')
    expect(bytes.details).to.include({ limit: 'dependencyBytes', value: 1024, source: 'call' })
  })

  it('keeps the workspace limits for everything outside dependency directories', async () => {
    ctx = await startWorkspace({ repairMaxFiles: 50 })
    manyFiles('lib', 60)
    const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_LIMIT')
    expect(error.details).to.include({ limit: 'entries', configKey: 'repairMaxFiles' })
  })

  it('still changes the digest for a change inside a dependency directory', async () => {
    ctx = await startWorkspace()
    writeTree(root, { 'node_modules/dep/index.js': 'module.exports = 1' })
    pinTimes(root)
    const before = await ctx.workspace.stamp(root)
    writeFileSync(join(root, 'node_modules/dep/index.js'), 'module.exports = 2')
    pinTimes(root)
    const after = await ctx.workspace.stamp(root)
    expect(after.digest).to.not.equal(before.digest)
    expect(after.dependencies).to.deep.equal(before.dependencies)
  })

  it('matches a name at any depth and a path from the root only', async () => {
    ctx = await startWorkspace()
    writeTree(root, {
      'packages/a/node_modules/x.js': '1', // a monorepo package's own node_modules
      '.yarn/cache/p.zip': '22',
      'lib/.yarn/cache/not-a-cache.txt': '333', // .yarn/cache is a root path
    })
    const stamp = await ctx.workspace.stamp(root)
    expect(stamp.dependencies).to.deep.equal({ entries: 4, files: 2, bytes: 3, links: 0 })
  })

  it('treats nothing as a dependency with dependencyDirectories: []', async () => {
    ctx = await startWorkspace({ dependencyDirectories: [] })
    writeTree(root, { 'node_modules/x.js': '1' })
    expect((await ctx.workspace.stamp(root)).dependencies).to.deep.equal({ entries: 0, files: 0, bytes: 0, links: 0 })
  })

  it('refuses a dependency pattern that cannot name a directory below the root (CONFIG_INVALID)', async () => {
    const { Config } = await import('../src')
    for (const bad of ['', '/abs', '../up', 'a//b', 'a/./b', '.git/x', 'with space', 'trailing/']) {
      expect(() => Config({ dependencyDirectories: [bad] }), JSON.stringify(bad)).to.throw(/dependencyDirectories/)
    }
  })

  it('reads a workspace once, whole or one part: the stamp digest, and part digests that move only with their part', async () => {
    ctx = await startWorkspace()
    writeTree(root, { 'node_modules/dep/index.js': 'module.exports = 1' })
    pinTimes(root)
    const whole = await ctx.workspace.read(root)
    expect(whole.digest).to.equal((await ctx.workspace.stamp(root)).digest)
    expect(await ctx.workspace.read(root, 'own')).to.deep.equal({ workspaceKey: whole.workspaceKey, own: whole.own })
    expect(await ctx.workspace.read(root, 'dependencies')).to.deep.equal({ workspaceKey: whole.workspaceKey, dependencies: whole.dependencies })

    writeFileSync(join(root, 'node_modules/dep/index.js'), 'module.exports = 2')
    pinTimes(root)
    const depChanged = await ctx.workspace.read(root)
    expect(depChanged.own!.digest).to.equal(whole.own!.digest)
    expect(depChanged.dependencies!.digest).to.not.equal(whole.dependencies!.digest)
    expect(depChanged.dependencies!.content).to.not.equal(whole.dependencies!.content)
    // pinTimes wrote every entry's times: same content and mtimes, but every ctime moved.
    expect(depChanged.own!.content).to.equal(whole.own!.content)
    expect(depChanged.own!.versions).to.not.equal(whole.own!.versions)

    writeFileSync(join(root, 'src/index.ts'), 'export const changed = 1')
    pinTimes(root)
    const ownChanged = await ctx.workspace.read(root)
    expect(ownChanged.own!.digest).to.not.equal(depChanged.own!.digest)
    expect(ownChanged.dependencies!.digest).to.equal(depChanged.dependencies!.digest)
  })

  it('does not walk dependency directories when reading the own part only', async () => {
    ctx = await startWorkspace({ dependencyMaxEntries: 5 })
    manyFiles('node_modules', 30)
    await rejectsWith(ctx.workspace.read(root), 'ARTIFACT_LIMIT')
    expect((await ctx.workspace.read(root, 'own')).own!.digest).to.match(/^[0-9a-f]{64}$/)
  })

  it('never follows a dependency directory that is a link', async () => {
    ctx = await startWorkspace()
    const elsewhere = makeTempDir()
    try {
      writeTree(elsewhere, { 'lots.js': 'x'.repeat(100) })
      symlinkSync(elsewhere, join(root, 'node_modules'))
      const stamp = await ctx.workspace.stamp(root)
      expect(stamp).to.include({ files: 2, links: 1 })
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })
})

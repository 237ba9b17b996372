import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { makeTempDir, pinTimes, removeTree, startWorkspace, writeTree } from './fixtures'

const WORKTREE: Record<string, string | Buffer> = {
  'README.md': '# demo\n',
  'src/index.ts': 'export const answer = 42\n',
  'src/util/strings.ts': 'export const hello = "hi"\n',
  'assets/logo.bin': Buffer.from([0, 1, 2, 3, 255]),
  '.gitignore': 'ignored.log\nbuild/\n',
}

describe('workspace stamp: what the digest covers', () => {
  let ctx: Context
  let root: string

  beforeEach(async () => {
    ctx = await startWorkspace()
    root = makeTempDir()
    writeTree(root, {
      ...WORKTREE,
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.git/config': '[core]\n',
      '.git/objects/': '',
    })
    pinTimes(root)
  })

  afterEach(async () => {
    await ctx.stop()
    removeTree(root)
  })

  /** Stamp after `change` (times pinned again, so only the change itself can move the digest). */
  async function digestAfter(change: () => void) {
    const before = await ctx.workspace.stamp(root)
    change()
    pinTimes(root)
    const after = await ctx.workspace.stamp(root)
    return { before, after }
  }

  it('gives the same stamp for the same tree twice', async () => {
    const a = await ctx.workspace.stamp(root)
    const b = await ctx.workspace.stamp(root)
    expect(a).to.deep.equal(b)
    expect(a.digest).to.match(/^[0-9a-f]{64}$/)
    expect(a.workspaceKey).to.match(/^[0-9a-f]{64}$/)
    // The root .git is neither counted nor hashed.
    const contents = Object.values(WORKTREE)
    expect(a.files).to.equal(contents.length)
    expect(a.bytes).to.equal(contents.reduce<number>((sum, content) => sum + Buffer.byteLength(content), 0))
  })

  it('changes when one byte of a file changes, even with size and mtime kept', async () => {
    const { before, after } = await digestAfter(() => {
      const path = join(root, 'src/index.ts')
      writeFileSync(path, readFileSync(path, 'utf8').replace('42', '43'))
    })
    expect(after.bytes).to.equal(before.bytes)
    expect(after.digest).to.not.equal(before.digest)
  })

  it('reads every byte of small and large files alike while its read buffer grows (a byte past the first megabyte, a byte after it)', async () => {
    // Small files first (the buffer starts small), then a file larger than the largest buffer, then small ones again.
    const large = Buffer.alloc(3 * 1024 * 1024 + 17, 7)
    writeTree(root, { 'a-small.txt': 'tiny', 'b-large.bin': large, 'c-small.txt': 'small again' })
    pinTimes(root)
    const { before, after } = await digestAfter(() => {
      const changed = Buffer.from(large)
      changed[2 * 1024 * 1024 + 5] = 8
      writeFileSync(join(root, 'b-large.bin'), changed)
    })
    expect(after.digest).to.not.equal(before.digest)
    const again = await digestAfter(() => writeFileSync(join(root, 'c-small.txt'), 'small agaiN'))
    expect(again.after.digest).to.not.equal(again.before.digest)
  })

  it('changes when a file is renamed', async () => {
    const { before, after } = await digestAfter(() => renameSync(join(root, 'README.md'), join(root, 'README.txt')))
    expect(after.files).to.equal(before.files)
    expect(after.digest).to.not.equal(before.digest)
  })

  it('changes when a new empty file appears', async () => {
    const { before, after } = await digestAfter(() => writeFileSync(join(root, 'src/empty.ts'), ''))
    expect(after.bytes).to.equal(before.bytes)
    expect(after.digest).to.not.equal(before.digest)
  })

  it('changes when a new empty directory appears', async () => {
    const { before, after } = await digestAfter(() => mkdirSync(join(root, 'src/later')))
    expect(after.files).to.equal(before.files)
    expect(after.digest).to.not.equal(before.digest)
  })

  it('changes when a mode changes (file or directory)', async () => {
    const file = await digestAfter(() => chmodSync(join(root, 'README.md'), 0o755))
    expect(file.after.digest).to.not.equal(file.before.digest)
    const directory = await digestAfter(() => chmodSync(join(root, 'src'), 0o700))
    expect(directory.after.digest).to.not.equal(directory.before.digest)
  })

  it('changes when only an mtime changes', async () => {
    const a = await ctx.workspace.stamp(root)
    pinTimes(join(root, 'src/index.ts'), 1_700_000_000)
    const b = await ctx.workspace.stamp(root)
    expect(b.digest).to.not.equal(a.digest)
  })

  it('counts untracked files and files .gitignore names', async () => {
    const untracked = await digestAfter(() => writeFileSync(join(root, 'notes.txt'), 'draft'))
    expect(untracked.after.digest).to.not.equal(untracked.before.digest)
    const ignored = await digestAfter(() => writeTree(root, { 'ignored.log': 'x', 'build/out.js': 'y' }))
    expect(ignored.after.digest).to.not.equal(ignored.before.digest)
    expect(ignored.after.files).to.equal(ignored.before.files + 2)
  })

  it('ignores everything inside the root .git, without pinning times back', async () => {
    const before = await ctx.workspace.stamp(root)
    writeFileSync(join(root, '.git/HEAD'), 'ref: refs/heads/other\n')
    writeTree(root, { '.git/objects/ab/cdef': 'blob', '.git/index': 'x'.repeat(1000) })
    const after = await ctx.workspace.stamp(root)
    expect(after).to.deep.equal(before)
  })

  it('treats a root .git that is a file (a worktree pointer) as excluded too', async () => {
    removeTree(join(root, '.git'))
    pinTimes(root)
    const before = await ctx.workspace.stamp(root)
    writeFileSync(join(root, '.git'), 'gitdir: /elsewhere\n')
    pinTimes(root)
    const after = await ctx.workspace.stamp(root)
    expect(after).to.deep.equal(before)
  })

  it('treats a nested .git as content', async () => {
    writeTree(root, { 'vendor/lib/.git/HEAD': 'ref: refs/heads/main\n' })
    pinTimes(root)
    const { before, after } = await digestAfter(() => writeFileSync(join(root, 'vendor/lib/.git/HEAD'), 'ref: refs/heads/dev\n'))
    expect(after.digest).to.not.equal(before.digest)
  })

  it('binds the key to the directory: the same content elsewhere is another workspace', async () => {
    const twin = makeTempDir()
    try {
      writeTree(twin, WORKTREE)
      pinTimes(twin)
      const a = await ctx.workspace.stamp(root)
      const b = await ctx.workspace.stamp(twin)
      expect(b.digest).to.equal(a.digest)
      expect(b.workspaceKey).to.not.equal(a.workspaceKey)
    } finally {
      removeTree(twin)
    }
  })

  it('gives a directory recreated at the same path another key', async () => {
    const a = await ctx.workspace.stamp(root)
    const moved = `${root}-moved`
    renameSync(root, moved)
    try {
      mkdirSync(root)
      const b = await ctx.workspace.stamp(root)
      expect(b.workspaceKey).to.not.equal(a.workspaceKey)
      // The moved directory keeps its inode but not its path: also another workspace.
      const c = await ctx.workspace.stamp(moved)
      expect(c.workspaceKey).to.not.equal(a.workspaceKey)
      expect(c.digest).to.equal(a.digest)
    } finally {
      removeTree(moved)
    }
  })
})

import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { build } from 'esbuild'
import { assertNodeRunnableBy, NOBODY } from '@taskward/testkit'
import { makeTempDir, rejectsWith, removeTree, startWorkspace, writeTree } from './fixtures'

/**
 * The stamp child bundled into one file in a world-readable temp directory, so that `nobody` can run it
 * wherever the checkout is (a checkout under /root or a mode-700 `mktemp -d` is closed to other users,
 * and with it node_modules). The bundle is the real plugin code: cordis, the workspace plugin and the
 * protocol sources, nothing stubbed.
 */
async function bundleStampChild(): Promise<{ file: string, dir: string }> {
  const dir = makeTempDir('taskward-stamp-child-')
  chmodSync(dir, 0o755)
  const file = join(dir, 'stamp-child.mjs')
  await build({
    entryPoints: [fileURLToPath(new URL('./stamp-child.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['source'],
    outfile: file,
    logLevel: 'silent',
    // CommonJS dependencies inside an ES module bundle still call require() for node built-ins.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  })
  chmodSync(file, 0o644)
  return { file, dir }
}

describe('workspace stamp: refusals', () => {
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

  describe('ARTIFACT_UNSUPPORTED', () => {
    it('refuses a FIFO without opening it (no hang)', async () => {
      execFileSync('mkfifo', [join(root, 'src/pipe')])
      const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_UNSUPPORTED')
      expect(error.details).to.include({ path: 'src/pipe', type: 'FIFO (named pipe)' })
    })

    it('refuses a socket', async () => {
      const path = join(root, 'server.sock')
      const server: Server = createServer()
      await new Promise<void>((resolve) => server.listen(path, resolve))
      try {
        const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_UNSUPPORTED')
        expect(error.details).to.include({ path: 'server.sock', type: 'socket' })
      } finally {
        await new Promise((resolve) => server.close(resolve))
      }
    })

    it('never walks the root .git, so links and FIFOs in it do not matter', async () => {
      mkdirSync(join(root, '.git'))
      symlinkSync('/', join(root, '.git/link'))
      execFileSync('mkfifo', [join(root, '.git/pipe')])
      const stamp = await ctx.workspace.stamp(root)
      expect(stamp.files).to.equal(2)
    })
  })

  describe('ARTIFACT_UNAVAILABLE', () => {
    it('refuses a missing root', async () => {
      const missing = join(root, 'does-not-exist')
      const error = await rejectsWith(ctx.workspace.stamp(missing), 'ARTIFACT_UNAVAILABLE')
      expect(error.details).to.include({ path: missing, errno: 'ENOENT' })
    })

    it('refuses a root that is a file', async () => {
      const error = await rejectsWith(ctx.workspace.stamp(join(root, 'a.txt')), 'ARTIFACT_UNAVAILABLE')
      expect(error.message).to.contain('not a directory')
    })

    it('refuses an empty root (no workspace bound)', async () => {
      const error = await rejectsWith(ctx.workspace.stamp(''), 'ARTIFACT_UNAVAILABLE')
      expect(error.details).to.include({ reason: 'no-root' })
    })

    it('follows a root that is a symlink to its real directory', async () => {
      const link = `${root}-link`
      symlinkSync(root, link)
      try {
        expect(await ctx.workspace.stamp(link)).to.deep.equal(await ctx.workspace.stamp(root))
      } finally {
        removeTree(link)
      }
    })

    it('refuses an entry this process cannot read', async function () {
      mkdirSync(join(root, 'locked'))
      writeFileSync(join(root, 'locked/inner.txt'), 'x')
      chmodSync(join(root, 'locked'), 0o000)
      try {
        if (process.getuid?.() === 0) {
          // root reads through any mode: stamp as `nobody` in a child process instead.
          assertNodeRunnableBy(NOBODY)
          chmodSync(root, 0o755)
          const child = await bundleStampChild()
          try {
            const asNobody = (path: string) => spawnSync(process.execPath, [child.file, path], { uid: NOBODY, gid: NOBODY, encoding: 'utf8', cwd: child.dir })
            // The child works as nobody: once the entry is readable it stamps the tree.
            chmodSync(join(root, 'locked'), 0o755)
            const readable = asNobody(root)
            expect(readable.status, readable.stderr).to.equal(0)
            expect(JSON.parse(readable.stdout).stamp.digest).to.match(/^[0-9a-f]{64}$/)
            chmodSync(join(root, 'locked'), 0o000)
            const result = asNobody(root)
            expect(result.status, result.stderr).to.equal(0)
            const outcome = JSON.parse(result.stdout)
            expect(outcome.code).to.equal('ARTIFACT_UNAVAILABLE')
            expect(outcome.details).to.include({ path: 'locked', errno: 'EACCES' })
          } finally {
            removeTree(child.dir)
          }
        } else {
          const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_UNAVAILABLE')
          expect(error.details).to.include({ path: 'locked', errno: 'EACCES' })
        }
      } finally {
        chmodSync(join(root, 'locked'), 0o755)
      }
    })
  })
})

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, type StampProgress } from '@taskward/protocol'
import WorkspacePlugin from '../src'
import { makeTempDir, rejectsWith, removeTree, startWorkspace, writeTree } from './fixtures'

describe('workspace stamp: limits', () => {
  let root: string
  let ctx: Context

  beforeEach(() => {
    root = makeTempDir()
    // 6 entries: dir/, dir/a, dir/b, c, d, empty/ ; 10 + 20 + 30 + 40 = 100 bytes
    writeTree(root, {
      'dir/a': 'x'.repeat(10),
      'dir/b': 'x'.repeat(20),
      'c': 'x'.repeat(30),
      'd': 'x'.repeat(40),
      'empty/': '',
      // not counted: the root .git is outside the stamp
      '.git/objects/1': 'x'.repeat(500),
      '.git/objects/2': 'x'.repeat(500),
    })
  })

  afterEach(async () => {
    await ctx?.stop()
    removeTree(root)
  })

  describe('entries (files and directories below the root)', () => {
    it('succeeds at exactly the limit and fails at limit + 1, naming the limit and its config key', async () => {
      ctx = await startWorkspace({ repairMaxFiles: 6 })
      const stamp = await ctx.workspace.stamp(root)
      expect(stamp.files).to.equal(4)

      // walk order: c, d, dir, dir/a, dir/b, e, empty: the 7th entry is `empty`
      writeFileSync(join(root, 'e'), '')
      const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_LIMIT')
      expect(error.details).to.include({ limit: 'entries', value: 6, configKey: 'repairMaxFiles', option: 'maxFiles', source: 'config', reached: 7, path: 'empty' })
      expect(error.message).to.contain('repairMaxFiles')
    })

    it('counts an empty directory as an entry', async () => {
      ctx = await startWorkspace({ repairMaxFiles: 6 })
      mkdirSync(join(root, 'empty/again'))
      const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_LIMIT')
      expect(error.details).to.include({ limit: 'entries', path: 'empty/again' })
    })

    it('takes a per-call maxFiles over the configured value', async () => {
      ctx = await startWorkspace({ repairMaxFiles: 6 })
      const error = await rejectsWith(ctx.workspace.stamp(root, { maxFiles: 5 }), 'ARTIFACT_LIMIT')
      expect(error.details).to.include({ limit: 'entries', value: 5, source: 'call', configKey: 'repairMaxFiles' })
      const stamp = await ctx.workspace.stamp(root, { maxFiles: 6 })
      expect(stamp.files).to.equal(4)
    })
  })

  describe('bytes (regular-file content)', () => {
    it('succeeds at exactly the limit and fails at limit + 1 byte', async () => {
      ctx = await startWorkspace({ repairMaxBytes: 100 })
      expect((await ctx.workspace.stamp(root)).bytes).to.equal(100)

      // walk order: c (30), d (41), dir/a (10), dir/b (20): byte 101 is reached at dir/b
      writeFileSync(join(root, 'd'), 'x'.repeat(41))
      const error = await rejectsWith(ctx.workspace.stamp(root), 'ARTIFACT_LIMIT')
      expect(error.details).to.include({ limit: 'bytes', value: 100, configKey: 'repairMaxBytes', option: 'maxBytes', source: 'config', reached: 101, path: 'dir/b' })
      expect(error.message).to.contain('repairMaxBytes')
    })

    it('fails as soon as a file passes the limit, before reading that file', async () => {
      ctx = await startWorkspace()
      const seen: string[] = []
      // walk order: c (30), d (40), dir/, dir/a (10), ...; 30 + 40 > 50 fails at d
      const error = await rejectsWith(ctx.workspace.stamp(root, {
        maxBytes: 50,
        onProgress: (progress) => { if (progress.path) seen.push(progress.path) },
      }), 'ARTIFACT_LIMIT')
      expect(error.details).to.include({ limit: 'bytes', path: 'd', source: 'call' })
      expect(seen).to.deep.equal(['c'])
    })
  })

  it('refuses a per-call limit that is not a positive safe integer', async () => {
    ctx = await startWorkspace()
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '10' as any]) {
      const error = await rejectsWith(ctx.workspace.stamp(root, { maxFiles: bad }), 'BAD_REQUEST')
      expect(error.details).to.include({ option: 'maxFiles' })
      await rejectsWith(ctx.workspace.stamp(root, { maxBytes: bad }), 'BAD_REQUEST')
    }
  })

  describe('config at load', () => {
    // cordis logs the refused config; keep the test output readable.
    let level: number
    before(() => { level = Logger.levels.base; Logger.levels.base = Logger.SILENT })
    after(() => { Logger.levels.base = level })

    it('defaults to 10000 entries and 256 MiB', async () => {
      ctx = await startWorkspace()
      const limits = ctx.workspace.limits()
      expect(limits.entries).to.include({ value: DEFAULT_MAX_ENTRIES, configKey: 'repairMaxFiles' })
      expect(limits.bytes).to.include({ value: DEFAULT_MAX_BYTES, configKey: 'repairMaxBytes' })
      expect(DEFAULT_MAX_ENTRIES).to.equal(10000)
      expect(DEFAULT_MAX_BYTES).to.equal(256 * 1024 * 1024)
    })

    for (const [key, value] of [
      ['repairMaxFiles', 0], ['repairMaxFiles', 1.5], ['repairMaxFiles', -3], ['repairMaxFiles', '100'],
      ['repairMaxBytes', 0], ['repairMaxBytes', 2 ** 60], ['repairMaxBytes', Number.NaN],
    ] as const) {
      it(`refuses ${key}: ${typeof value === 'string' ? JSON.stringify(value) : String(value)} when the plugin loads`, async () => {
        ctx = new Context()
        const errors: unknown[] = []
        ctx.on('internal/error', (error) => { errors.push(error) })
        const fork = ctx.plugin(WorkspacePlugin, { [key]: value } as any)
        await ctx.start()
        expect(fork.error, 'the fork carries the config error').to.be.instanceOf(Error)
        expect(String(fork.error.message)).to.contain(key)
        expect(errors).to.include(fork.error)
        expect(ctx.get('workspace')).to.equal(undefined)
      })
    }
  })

  it('reports progress with entries and bytes, ending each capture with a done event', async () => {
    ctx = await startWorkspace()
    const events: StampProgress[] = []
    const stamp = await ctx.workspace.stamp(root, { onProgress: (progress) => events.push(progress) })
    const done = events.filter((event) => event.done)
    expect(done.map((event) => event.capture)).to.deep.equal([1, 2])
    for (const event of done) expect(event).to.include({ entries: 6, bytes: stamp.bytes })
    expect(done[1].expected).to.deep.equal({ entries: 6, bytes: 100 })
    for (const capture of [1, 2]) {
      const bytes = events.filter((event) => event.capture === capture).map((event) => event.bytes)
      expect(bytes).to.deep.equal([...bytes].sort((a, b) => a - b))
      expect(events.filter((event) => event.capture === capture && event.path).map((event) => event.path).sort())
        .to.deep.equal(['c', 'd', 'dir/a', 'dir/b'])
    }
  })
})

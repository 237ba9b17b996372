import { tmpdir } from 'node:os'
import { expect } from 'chai'
import { removeTree, type TestHost } from '@taskward/testkit'
import { copyEstimate, isMemoryDirectory, MEMORY_DIRECTORY, MemoryCopies } from '../src/memory-copies'
import { answerWorkspace, bootRecovery, checkAreas, closeRecovery, readyTask, requireBwrap, type RecoveryConfig } from './fixtures'

const part = (entries: number, bytes: number) => ({ digest: 'd', versions: 'v', content: 'c', entries, bytes })

describe('recovery: the checks\' copies in memory, within a budget', function () {
  this.timeout(60_000)

  describe('MemoryCopies', () => {
    const always = () => true
    const roomy = () => Number.MAX_SAFE_INTEGER

    it('reserves within the budget, refuses past it, and gives the room back on release (once)', () => {
      const memory = new MemoryCopies(10_000, '/mem', always, roomy)
      const first = memory.reserve(6000, '/work/a')
      expect(first?.base).to.equal('/mem')
      expect(memory.reserve(5000, '/work/b'), 'past the budget').to.equal(undefined)
      const second = memory.reserve(4000, '/work/b')
      expect(memory.reserved).to.equal(10_000)
      first!.release()
      first!.release()
      expect(memory.reserved).to.equal(4000)
      second!.release()
      expect(memory.reserved).to.equal(0)
    })

    it('keeps every copy on disk with a budget of 0, where the directory is no writable tmpfs, without room, or when it and the workspace contain one another', () => {
      expect(new MemoryCopies(0, '/mem', always, roomy).reserve(0, '/work/a')).to.equal(undefined)
      let probes = 0
      const notTmpfs = new MemoryCopies(1 << 20, '/mem', () => (probes++, false), roomy)
      expect(notTmpfs.reserve(10, '/work/a')).to.equal(undefined)
      expect(notTmpfs.reserve(10, '/work/a')).to.equal(undefined)
      expect(probes, 'looked at once').to.equal(1)
      expect(new MemoryCopies(1 << 20, '/mem', always, () => 1000).reserve(600, '/work/a'), 'less free than twice the copy').to.equal(undefined)
      expect(new MemoryCopies(1 << 20, '/mem', always, roomy).reserve(10, '/mem/work/a'), 'a workspace in memory').to.equal(undefined)
      expect(new MemoryCopies(1 << 20, '/mem', always, roomy).reserve(10, '/'), 'a workspace holding it').to.equal(undefined)
      expect(new MemoryCopies(1 << 20, '/mem', always, roomy).reserve(Number.NaN, '/work/a'), 'no estimate').to.equal(undefined)
    })

    it('counts the copies reserved but not made yet against the free room (a container\'s /dev/shm of 64 MiB)', () => {
      const memory = new MemoryCopies(128 << 20, '/mem', always, () => 64 << 20)
      expect(memory.reserve(24 << 20, '/work/a')).to.not.equal(undefined)
      expect(memory.reserve(24 << 20, '/work/b'), '64 MiB free less the 24 reserved is under twice 24').to.equal(undefined)
      expect(memory.reserve(10 << 20, '/work/c')).to.not.equal(undefined)
    })

    it('estimates a copy by its bytes and a page an entry, the dependency directories only when they are copied', () => {
      const parts = { own: part(3, 100), dependencies: part(1000, 5_000_000) }
      expect(copyEstimate(parts, true)).to.equal(100 + 3 * 4096)
      expect(copyEstimate(parts, false)).to.equal(100 + 3 * 4096 + 5_000_000 + 1000 * 4096)
    })

    it('knows /dev/shm for a tmpfs, and /proc or a missing directory for none', function () {
      if (process.platform !== 'linux') this.skip()
      expect(isMemoryDirectory(MEMORY_DIRECTORY)).to.equal(true)
      expect(isMemoryDirectory('/proc')).to.equal(false)
      expect(isMemoryDirectory('/no/such/directory')).to.equal(false)
    })
  })

  describe('a verification', () => {
    let host: TestHost | undefined
    let cwd: string | undefined
    afterEach(async () => {
      await closeRecovery(host, cwd)
      host = cwd = undefined
    })

    /** Where the check's copy was (its HOME's parent, as the check printed it), and the file system it ran on. */
    async function checkWhere(config: RecoveryConfig, setUp?: (host: TestHost) => void) {
      host = await bootRecovery(config)
      setUp?.(host)
      cwd = await answerWorkspace('alpha')
      const { session, task } = await readyTask(host, cwd, [{ id: 'where', argv: ['sh', '-c', 'echo "home $HOME"; stat -f -c "fs %T" .'], timeoutMs: 20_000 }])
      const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
      const output = attempt.checks[0].outputExcerpt ?? ''
      expect(attempt.checks[0].verdict, output).to.equal('PASS')
      return { home: /^home (.*)$/m.exec(output)?.[1] ?? '', fs: /^fs (.*)$/m.exec(output)?.[1] ?? '' }
    }

    for (const sandbox of ['copy', 'bwrap'] as const) {
      it(`copies a small candidate into memory, removes it and gives its room back (${sandbox})`, async function () {
        if (sandbox === 'bwrap') await requireBwrap.call(this)
        const { home, fs } = await checkWhere({ sandbox })
        expect(home.startsWith(`${MEMORY_DIRECTORY}/taskward-check-`), home).to.equal(true)
        expect(fs).to.equal('tmpfs')
        expect(host!.ctx.recovery.memoryCopies.reserved).to.equal(0)
        expect((await checkAreas()).filter((area) => home.startsWith(area + '/'))).to.deep.equal([])
      })
    }

    it('copies into the temp directory with memoryCopyBytes 0, and a candidate larger than the budget', async () => {
      for (const memoryCopyBytes of [0, 1000]) {
        const { home } = await checkWhere({ sandbox: 'copy', memoryCopyBytes })
        expect(home.startsWith(`${tmpdir()}/taskward-check-`), `${memoryCopyBytes}: ${home}`).to.equal(true)
        await host!.dispose()
        await removeTree(cwd!)
        host = cwd = undefined
      }
    })

    it('makes the copy in the temp directory when the one in memory fails, and releases its room', async () => {
      let memory: MemoryCopies | undefined
      const { home } = await checkWhere({ sandbox: 'copy' }, (booted) => {
        // A directory that cannot hold the copy, taken for a roomy tmpfs: the launcher's mkdtemp fails there.
        memory = new MemoryCopies(1 << 30, '/no/such/directory', () => true, () => Number.MAX_SAFE_INTEGER)
        Object.defineProperty(booted.ctx.recovery, 'memoryCopies', { value: memory })
      })
      expect(home.startsWith(`${tmpdir()}/taskward-check-`), home).to.equal(true)
      expect(memory!.reserved).to.equal(0)
    })
  })
})

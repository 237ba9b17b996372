import { expect } from 'chai'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Flusher, RECENT_FLUSHES } from '../src/flusher'

describe('database: the WAL flusher\'s record of its flushes', () => {
  let dir: string
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'taskward-flusher-')) })
  afterEach(() => rm(dir, { recursive: true, force: true }))

  it('keeps the durations of the latest flushes only, each a real fsync\'s', async () => {
    const wal = join(dir, 'taskward.db-wal')
    await writeFile(wal, 'frames')
    const flusher = new Flusher(wal, dir)
    try {
      expect(flusher.recentDurations()).to.deep.equal([])
      // One waiter at a time: each durable() is a flush of its own.
      for (let i = 0; i < RECENT_FLUSHES + 20; i++) await flusher.durable()
      expect(flusher.flushes).to.equal(RECENT_FLUSHES + 20)
      const recent = flusher.recentDurations()
      expect(recent).to.have.length(RECENT_FLUSHES)
      expect(recent.every((ms) => Number.isFinite(ms) && ms >= 0)).to.equal(true)
    } finally {
      flusher.close()
    }
  })
})

import { expect } from 'chai'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Flusher, RECENT_FLUSHES } from '../src/flusher'

describe('database: the WAL flusher\'s record of its flushes', () => {
  let dir: string
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'taskward-flusher-')) })
  afterEach(() => rm(dir, { recursive: true, force: true }))

  it('keeps the waits of the latest flushes only, in the slot of each', async () => {
    const wal = join(dir, 'taskward.db-wal')
    await writeFile(wal, 'frames')
    // A clock that makes flush n (from 1) take n ms; a sync that fails the 600th call.
    let now = 0
    let calls = 0
    let syncs = 0
    const flusher = new Flusher(wal, dir, {
      clock: () => (calls++ % 2 === 0 ? now : (now += syncs)),
      sync: async () => { if (++syncs === 600) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }) },
    })
    try {
      for (let i = 0; i < 599; i++) await flusher.durable()
      expect(flusher.flushes).to.equal(599)
      // The latest 512: flushes 88 to 599, each its own number of ms.
      expect(flusher.recentFlushMs().sort((a, b) => a - b)).to.deep.equal(Array.from({ length: RECENT_FLUSHES }, (_, i) => 88 + i))
      // A failed flush is neither counted nor recorded (and the store refuses from then on).
      const failed = await flusher.durable().then(() => undefined, (error) => error)
      expect(failed?.code).to.equal('EIO')
      expect(flusher.flushes).to.equal(599)
      expect(flusher.recentFlushMs().sort((a, b) => a - b)[0]).to.equal(88)
    } finally {
      flusher.close()
    }
  })

  it('times real fsyncs of the WAL file', async () => {
    const wal = join(dir, 'taskward.db-wal')
    await writeFile(wal, 'frames')
    const flusher = new Flusher(wal, dir)
    try {
      expect(flusher.recentFlushMs()).to.deep.equal([])
      // One waiter at a time: each durable() is a flush of its own.
      for (let i = 0; i < RECENT_FLUSHES + 20; i++) await flusher.durable()
      expect(flusher.flushes).to.equal(RECENT_FLUSHES + 20)
      const recent = flusher.recentFlushMs()
      expect(recent).to.have.length(RECENT_FLUSHES)
      expect(recent.every((ms) => Number.isFinite(ms) && ms >= 0) && recent.some((ms) => ms > 0)).to.equal(true)
    } finally {
      flusher.close()
    }
  })
})

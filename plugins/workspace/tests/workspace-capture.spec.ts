import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { appendFileSync, closeSync, constants, openSync, unlinkSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { StampProgress } from '@taskward/protocol'
import { makeTempDir, rejectsWith, removeTree, startWorkspace, writeTree } from './fixtures'

describe('workspace stamp: double capture, aborts and the event loop', () => {
  let ctx: Context
  let root: string

  beforeEach(async () => {
    ctx = await startWorkspace()
    root = makeTempDir()
    writeTree(root, { 'a.txt': 'first', 'lib/b.txt': 'second', 'lib/c.txt': 'third' })
  })

  afterEach(async () => {
    await ctx.stop()
    removeTree(root)
  })

  describe('ARTIFACT_CHANGED', () => {
    it('fails when a writer changes the tree between the two captures', async () => {
      const error = await rejectsWith(ctx.workspace.stamp(root, {
        onProgress: (progress) => {
          if (progress.capture === 1 && progress.done) writeFileSync(join(root, 'lib/new.txt'), 'written meanwhile')
        },
      }), 'ARTIFACT_CHANGED')
      expect(error.details).to.include({ reason: 'captures-differ', capture: 2, root })
      const { first, second } = error.details as any
      expect(second.files).to.equal(first.files + 1)
    })

    it('fails when only a file content changes between the captures (same size)', async () => {
      const error = await rejectsWith(ctx.workspace.stamp(root, {
        onProgress: (progress) => {
          if (progress.capture === 1 && progress.done) writeFileSync(join(root, 'a.txt'), 'FIRST')
        },
      }), 'ARTIFACT_CHANGED')
      expect(error.details).to.include({ reason: 'captures-differ' })
    })

    it('fails when a file changes while it is being read', async () => {
      writeFileSync(join(root, 'lib/big.bin'), Buffer.alloc(3 * 1024 * 1024, 7))
      let appended = false
      const error = await rejectsWith(ctx.workspace.stamp(root, {
        onProgress: (progress) => {
          // The first chunk of big.bin has been hashed; the rest is still to be read.
          if (progress.path === 'lib/big.bin' && !appended) {
            appended = true
            appendFileSync(join(root, 'lib/big.bin'), 'tail')
          }
        },
      }), 'ARTIFACT_CHANGED')
      expect(error.details).to.include({ reason: 'modified-during-read', path: 'lib/big.bin', capture: 1 })
      expect((error.details as any).changes).to.include('size')
    })

    it('fails when a file that was listed disappears before it is read', async () => {
      writeFileSync(join(root, 'b.txt'), 'listed with a.txt')
      let removed = false
      const error = await rejectsWith(ctx.workspace.stamp(root, {
        onProgress: (progress) => {
          // a.txt and b.txt were listed together; b.txt goes away right after a.txt is hashed.
          if (progress.path === 'a.txt' && !removed) {
            removed = true
            unlinkSync(join(root, 'b.txt'))
          }
        },
      }), 'ARTIFACT_CHANGED')
      expect(error.details).to.include({ reason: 'vanished', path: 'b.txt', capture: 1 })
    })
  })

  describe('abort', () => {
    it('rejects with ABORTED and ends the walk: no progress after the rejection', async () => {
      for (let i = 0; i < 200; i++) writeFileSync(join(root, `lib/many-${String(i).padStart(3, '0')}.txt`), `file ${i}`)
      const controller = new AbortController()
      let events = 0
      let settled = false
      let afterSettle = 0
      const error = await rejectsWith(ctx.workspace.stamp(root, {
        signal: controller.signal,
        onProgress: () => {
          events++
          if (settled) afterSettle++
          if (events === 5) controller.abort()
        },
      }), 'ABORTED')
      settled = true
      expect(error.message).to.contain('cancelled')
      expect(events).to.be.lessThan(20)
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(afterSettle).to.equal(0)
    })

    it('stops promptly when the signal is aborted from elsewhere mid-file', async () => {
      // Two captures of 128 MiB take a few hundred milliseconds; the abort comes after 5.
      writeFileSync(join(root, 'large.bin'), Buffer.alloc(128 * 1024 * 1024, 2))
      const controller = new AbortController()
      let abortedAt = 0
      let lastProgress = 0
      setTimeout(() => { abortedAt = performance.now(); controller.abort() }, 5)
      await rejectsWith(ctx.workspace.stamp(root, { signal: controller.signal, onProgress: () => { lastProgress = performance.now() } }), 'ABORTED')
      const settledAt = performance.now()
      expect(abortedAt).to.be.greaterThan(0)
      // The walk yields every few milliseconds, so the abort lands between two chunks.
      expect(settledAt - abortedAt).to.be.lessThan(100)
      expect(lastProgress).to.be.lessThan(abortedAt)
    })

    it('rejects at once with an already aborted signal', async () => {
      const controller = new AbortController()
      controller.abort()
      let events = 0
      await rejectsWith(ctx.workspace.stamp(root, { signal: controller.signal, onProgress: () => { events++ } }), 'ABORTED')
      expect(events).to.equal(0)
    })

    it('aborts between the two captures', async () => {
      const controller = new AbortController()
      const captures = new Set<number>()
      await rejectsWith(ctx.workspace.stamp(root, {
        signal: controller.signal,
        onProgress: (progress) => {
          captures.add(progress.capture)
          if (progress.done) controller.abort()
        },
      }), 'ABORTED')
      expect([...captures]).to.deep.equal([1])
    })
  })

  it('lets a progress callback fail the stamp with its own error', async () => {
    const boom = new Error('progress display failed')
    let caught: unknown
    try {
      await ctx.workspace.stamp(root, { onProgress: () => { throw boom } })
    } catch (error) {
      caught = error
    }
    expect(caught).to.equal(boom)
  })

  it('needs no thread-pool round trip: a stamp completes while every pool thread is blocked (a slow disk, fsyncs, lookups)', async function () {
    // A read of a FIFO that has no writer yet blocks a libuv pool thread until one opens it.
    const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4
    const fifos = Array.from({ length: pool }, (_, i) => join(root, `..`, `taskward-fifo-${process.pid}-${i}`))
    for (const fifo of fifos) execFileSync('mkfifo', [fifo])
    const blocked = fifos.map((fifo) => open(fifo, 'r').then((handle) => handle.close()))
    try {
      await new Promise((resolve) => setTimeout(resolve, 50))
      const stamped = await Promise.race([
        ctx.workspace.stamp(root).then((stamp) => stamp.files),
        new Promise((resolve) => setTimeout(() => resolve('stuck behind the blocked pool'), 3000)),
      ])
      expect(stamped).to.equal(3)
    } finally {
      // Release the pool threads: open each FIFO for writing.
      for (const fifo of fifos) closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
      await Promise.all(blocked)
      for (const fifo of fifos) unlinkSync(fifo)
    }
  })

  it('keeps the event loop turning while a large file is hashed', async () => {
    const size = 96 * 1024 * 1024
    const content = Buffer.alloc(size, 1)
    writeFileSync(join(root, 'large.bin'), content)
    // What a stamp that hashed the file in one piece would block for, on this machine.
    const started = performance.now()
    createHash('sha256').update(content).digest()
    const onePiece = performance.now() - started
    await ctx.workspace.stamp(root) // warm up (first-use initialisation is not what is measured)

    let longestGap = 0
    let last = performance.now()
    let ticks = 0
    let running = true
    const tick = () => {
      const now = performance.now()
      longestGap = Math.max(longestGap, now - last)
      last = now
      ticks++
      if (running) setImmediate(tick)
    }
    setImmediate(tick)
    const progress: StampProgress[] = []
    const stamp = await ctx.workspace.stamp(root, { onProgress: (event) => progress.push(event) })
    running = false
    expect(stamp.bytes).to.equal(size + 'first'.length + 'second'.length + 'third'.length)
    // Chunked: the large file reports progress once per chunk, and the loop keeps turning meanwhile.
    const chunks = progress.filter((event) => event.path === 'large.bin').length
    expect(chunks).to.be.at.least(2 * 64)
    expect(ticks).to.be.at.least(10)
    expect(longestGap, `one-piece hash takes ${onePiece.toFixed(1)} ms; ${ticks} turns`).to.be.lessThan(onePiece)
  })
})

describe('ChunkBuffer', () => {
  it('grows to what the largest file read so far needs, never past CHUNK_BYTES, and is reused while large enough', async () => {
    const { ChunkBuffer, CHUNK_BYTES } = await import('../src/hash-file')
    const chunks = new ChunkBuffer()
    const small = chunks.take(10)
    expect(small.length).to.equal(4096)
    expect(chunks.take(4000)).to.equal(small)
    const middle = chunks.take(5000)
    expect(middle.length).to.equal(8192)
    expect(chunks.take(0)).to.equal(middle)
    expect(chunks.take(50 * CHUNK_BYTES).length).to.equal(CHUNK_BYTES)
    expect(chunks.take(CHUNK_BYTES - 1).length).to.equal(CHUNK_BYTES)
  })
})

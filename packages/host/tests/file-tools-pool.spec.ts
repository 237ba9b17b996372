import { expect } from 'chai'
import { execFileSync } from 'node:child_process'
import { closeSync, constants, openSync, readFileSync, readSync, writeSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { removeTree, tempWorkspace } from '@taskward/testkit'
import { libuvThreadpoolSize } from '../src/store/threadpool'
import { openInside } from '../src/tools/open'

/**
 * Every thread of libuv's pool held by slow file-system calls (here: opens of FIFOs that wait for a
 * writer; on a busy host, fsyncs and calls queued behind them) must not hold up a file tool's lookups:
 * on a host of 500 sessions each of a write's ~15 asynchronous calls waited 15–25 ms for the pool.
 */
describe('host: file tools do not wait for libuv\'s file-system threads', function () {
  this.timeout(30_000)
  let cwd: string
  let fifos: string[]
  let held: Promise<FileHandle | undefined>[]

  beforeEach(async () => {
    cwd = await tempWorkspace({ 'src/a.txt': 'hello\n' })
    // More than the pool has threads: every thread blocks in open() until a writer comes.
    fifos = Array.from({ length: libuvThreadpoolSize(process.env.UV_THREADPOOL_SIZE) + 2 }, (_, i) => join(cwd, `fifo-${i}`))
    for (const fifo of fifos) execFileSync('mkfifo', [fifo])
    held = fifos.map((fifo) => open(fifo, 'r').catch(() => undefined))
    // Time for the pool's threads to take the opens (a blocked open never settles).
    await sleep(100)
  })

  afterEach(async () => {
    // A writer for each FIFO until every blocked open returned (one still queued has no reader yet: ENXIO).
    const settled = new Set<number>()
    held.forEach((promise, i) => promise.then(async (handle) => {
      await handle?.close()
      settled.add(i)
    }))
    for (let round = 0; settled.size < fifos.length && round < 2000; round++) {
      for (const [i, fifo] of fifos.entries()) {
        if (settled.has(i)) continue
        try {
          closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
        } catch {}
      }
      await sleep(5)
    }
    await removeTree(cwd)
  })

  it('opens and reads a file of the cwd while every thread is held', async () => {
    const outcome = await Promise.race([
      openInside(cwd, 'src/a.txt', 'read').then(({ fd, stats }) => {
        try {
          const buffer = Buffer.alloc(Number(stats.size))
          readSync(fd, buffer, 0, buffer.length, 0)
          return buffer.toString()
        } finally {
          closeSync(fd)
        }
      }),
      sleep(5_000).then(() => 'still waiting after 5 s'),
    ])
    expect(outcome).to.equal('hello\n')
  })

  it('creates a file in a new directory and writes it while every thread is held', async () => {
    // The tool's own part (the host around it waits for its store's flush, which is libuv's work).
    const outcome = await Promise.race([
      openInside(cwd, 'new/dir/b.txt', 'write').then(({ fd }) => {
        try {
          writeSync(fd, 'written')
        } finally {
          closeSync(fd)
        }
        return readFileSync(join(cwd, 'new/dir/b.txt'), 'utf8')
      }),
      sleep(5_000).then(() => 'still waiting after 5 s'),
    ])
    expect(outcome).to.equal('written')
  })

  it('refuses a path out of the cwd and a FIFO while every thread is held', async () => {
    const refusals = await Promise.race([
      Promise.all([
        openInside(cwd, '../x', 'read').then(() => undefined, (error) => error.code),
        openInside(cwd, 'fifo-0', 'read').then(() => undefined, (error) => error.code),
        openInside(cwd, 'src/missing.txt', 'edit').then(() => undefined, (error) => error.code),
      ]),
      sleep(5_000).then(() => 'still waiting after 5 s'),
    ])
    expect(refusals).to.deep.equal(['PATH_OUTSIDE_WORKSPACE', 'FILE_UNSUPPORTED', 'NOT_FOUND'])
  })
})

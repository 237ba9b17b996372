import { createHash } from 'node:crypto'
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'
import { versionChanges } from '@taskward/protocol'
import { changedError, entryFsError } from './fs-errors'
import type { Pacer } from './pacer'
import { versionOf } from './version'
import type { WalkEntry } from './walk'

/**
 * Files are read in chunks of this size into one reused buffer: memory stays bounded whatever the file
 * size, and hashing one chunk takes about a millisecond, so the pacer can yield between chunks.
 */
export const CHUNK_BYTES = 1024 * 1024

/**
 * The read buffer of one capture: as large as the largest file read so far needs, up to CHUNK_BYTES.
 * A capture of small files (recovery reads a workspace a few times per verification) then allocates
 * kilobytes, not a fresh megabyte each time: that much memory outside the heap, every capture, drove
 * the collector on a host verifying hundreds of tasks.
 */
export class ChunkBuffer {
  private buffer?: Buffer

  /** A buffer of at least `min(bytes, CHUNK_BYTES)` bytes (at least 4 KB), reused while it is large enough. */
  take(bytes: number): Buffer {
    const wanted = Math.min(CHUNK_BYTES, Math.max(4096, bytes))
    if (!this.buffer || this.buffer.length < wanted) {
      // Powers of two: a tree of growing files reallocates a handful of times, not once per file.
      this.buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, 2 ** Math.ceil(Math.log2(wanted))))
    }
    return this.buffer
  }
}

// O_NOFOLLOW: a file swapped for a symlink after it was listed is refused, not followed.
// O_NONBLOCK: a file swapped for a FIFO cannot hang the open.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)

/**
 * sha256 of a regular file's content. Fails with `ARTIFACT_CHANGED` when the file read is not the one
 * the walk listed, or when its size, mtime, ctime or mode changed by the time the last byte was read.
 * `onChunk` runs after each chunk is hashed (at least once, even for an empty file) and before the
 * final check.
 */
export async function hashFile(file: WalkEntry, buffer: Buffer, pacer: Pacer, onChunk: (bytes: number) => void): Promise<Buffer> {
  let fd: number
  try {
    fd = openSync(file.abs, OPEN_FLAGS)
  } catch (error) {
    throw entryFsError(file.path, 'opened', error)
  }
  try {
    const size = Number(file.stats.size)
    const hash = createHash('sha256')
    let offset = 0
    while (offset < size) {
      const bytesRead = readSync(fd, buffer, 0, Math.min(buffer.length, size - offset), offset)
      if (bytesRead === 0) throw changedError(file.path, 'modified-during-read', 'it became shorter while it was read')
      hash.update(buffer.subarray(0, bytesRead))
      offset += bytesRead
      onChunk(bytesRead)
      if (offset < size) await pacer.step()
    }
    if (size === 0) onChunk(0)
    const changes = versionChanges(versionOf(file.stats), versionOf(fstatSync(fd, { bigint: true })))
    if (changes.length) throw changedError(file.path, 'modified-during-read', 'its metadata changed while it was read', { changes })
    return hash.digest()
  } catch (error) {
    throw entryFsError(file.path, 'read', error)
  } finally {
    try {
      closeSync(fd)
    } catch {
      // The outcome is already decided; a failing close must not replace it.
    }
  }
}

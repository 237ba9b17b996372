import { createHash, type Hash } from 'node:crypto'

/** The batch's first size: below Node's pool threshold (4 KB), so a small workspace's digests allocate nothing of their own. */
const FIRST_BYTES = 1024
/** The largest batch: one hash call per frame costs more than the frame; one per 64 KB does not show. */
export const BATCH_BYTES = 64 * 1024

/**
 * Frames gathered and hashed a batch at a time, in the order they are written: the same bytes reach the
 * hash as if each frame were hashed on its own. The batch starts small and grows (×4, to BATCH_BYTES)
 * only when it fills: a capture makes several digests, recovery captures a workspace a few times per
 * verification, and a fixed 64 KB each was ~450 KB of fresh memory per capture of a two-file tree.
 */
export class HashBatch {
  private readonly hash: Hash
  private buffer = Buffer.allocUnsafe(FIRST_BYTES)
  private at = 0

  constructor(header: string) {
    this.hash = createHash('sha256').update(header)
  }

  /**
   * Room for `length` bytes (at most BATCH_BYTES): the buffer to write them into and where. What the
   * batch held is hashed first when they do not fit, and the batch grows if it may.
   */
  reserve(length: number): { buffer: Buffer, at: number } {
    if (this.at + length > this.buffer.length) {
      this.flush()
      if (this.buffer.length < BATCH_BYTES) this.buffer = Buffer.allocUnsafe(Math.min(BATCH_BYTES, Math.max(this.buffer.length * 4, length)))
    }
    const at = this.at
    this.at += length
    return { buffer: this.buffer, at }
  }

  /** Bytes hashed as they are, after what the batch holds (a frame longer than BATCH_BYTES). */
  update(bytes: Uint8Array): void {
    this.flush()
    this.hash.update(bytes)
  }

  /** The hex digest; the batch cannot be used afterwards. */
  hex(): string {
    this.flush()
    return this.hash.digest('hex')
  }

  private flush() {
    if (this.at) this.hash.update(this.buffer.subarray(0, this.at))
    this.at = 0
  }
}

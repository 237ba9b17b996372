import { BATCH_BYTES, HashBatch } from './hash-batch'
import type { EntryVersion } from './version'

/**
 * Two more digests of a part of a workspace, for a verification that reads it again (recovery):
 *
 * - `VersionDigest`: every entry's path and stat identity (device, inode, mode, size, mtime, ctime).
 *   ctime cannot be set back from user space, so a write that is put back afterwards (content and
 *   mtime restored), a rename away and back, or an inode swapped in shows here though the stamp
 *   digest, which frames content and mtime only, is the same again.
 * - `ContentDigest`: every entry's path, kind, permission bits and content (a file's size and sha256,
 *   a link's target), without times: what a copy of the part holds — a copy has its own times — so
 *   a check's copy can be compared with the candidate it should be of.
 *
 * Both frame paths length-prefixed, integers big-endian, under headers of their own.
 */
export const VERSION_DIGEST_HEADER = 'taskward-workspace-versions v1\n'
export const CONTENT_DIGEST_HEADER = 'taskward-workspace-content v1\n'

const PERMISSION_BITS = 0o7777n

/** Hashes frames a batch at a time (one hash call per frame costs more than the frame). */
class Batched {
  private readonly batch: HashBatch

  constructor(header: string) {
    this.batch = new HashBatch(header)
  }

  protected frame(length: number, write: (buffer: Buffer, at: number) => void): void {
    if (length > BATCH_BYTES) {
      const own = Buffer.allocUnsafe(length)
      write(own, 0)
      this.batch.update(own)
      return
    }
    const { buffer, at } = this.batch.reserve(length)
    write(buffer, at)
  }

  hex(): string {
    return this.batch.hex()
  }
}

/** `V | u32 pathLength | path | u64 dev | u64 ino | u32 mode | u64 size | i64 mtimeNs | i64 ctimeNs` per entry. */
export class VersionDigest extends Batched {
  constructor() {
    super(VERSION_DIGEST_HEADER)
  }

  add(path: Uint8Array, version: EntryVersion): void {
    this.frame(1 + 4 + path.length + 8 + 8 + 4 + 8 + 8 + 8, (buffer, start) => {
      let at = buffer.writeUInt8(0x56, start)
      at = buffer.writeUInt32BE(path.length, at)
      buffer.set(path, at)
      at = buffer.writeBigUInt64BE(BigInt.asUintN(64, version.dev), at + path.length)
      at = buffer.writeBigUInt64BE(BigInt.asUintN(64, version.ino), at)
      at = buffer.writeUInt32BE(Number(BigInt.asUintN(32, version.mode)), at)
      at = buffer.writeBigUInt64BE(BigInt.asUintN(64, version.size), at)
      at = buffer.writeBigInt64BE(version.mtimeNs, at)
      buffer.writeBigInt64BE(version.ctimeNs, at)
    })
  }
}

/**
 * `D | u32 pathLength | path | u32 permissions`, `F | … | u32 permissions | u64 size | sha256`,
 * `L | u32 pathLength | path | u32 targetLength | target` per entry.
 */
export class ContentDigest extends Batched {
  constructor() {
    super(CONTENT_DIGEST_HEADER)
  }

  addDirectory(path: Uint8Array, mode: bigint): void {
    this.frame(1 + 4 + path.length + 4, (buffer, start) => {
      const at = this.head(buffer, start, 0x44, path)
      buffer.writeUInt32BE(Number(mode & PERMISSION_BITS), at)
    })
  }

  addFile(path: Uint8Array, mode: bigint, size: bigint, contentSha256: Uint8Array): void {
    this.frame(1 + 4 + path.length + 4 + 8 + 32, (buffer, start) => {
      let at = this.head(buffer, start, 0x46, path)
      at = buffer.writeUInt32BE(Number(mode & PERMISSION_BITS), at)
      at = buffer.writeBigUInt64BE(size, at)
      buffer.set(contentSha256, at)
    })
  }

  addLink(path: Uint8Array, target: Uint8Array): void {
    this.frame(1 + 4 + path.length + 4 + target.length, (buffer, start) => {
      const at = buffer.writeUInt32BE(target.length, this.head(buffer, start, 0x4c, path))
      buffer.set(target, at)
    })
  }

  private head(buffer: Buffer, start: number, tag: number, path: Uint8Array): number {
    const at = buffer.writeUInt32BE(path.length, buffer.writeUInt8(tag, start))
    buffer.set(path, at)
    return at + path.length
  }
}

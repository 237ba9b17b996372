import { createHash } from 'node:crypto'
import { TaskwardError } from '../errors'
import { BATCH_BYTES, HashBatch } from './hash-batch'

/**
 * Digest framing, version 1. The digest is sha256 over `DIGEST_HEADER` followed by one frame per entry
 * in walk order. Every variable-length field is length-prefixed, so two different walks can never
 * produce the same byte stream. Integers are big-endian. docs/workspace.md restates this byte for byte.
 *
 *   directory: 'D' | u32 pathLength | path | u32 permissions | i64 mtimeNs
 *   file:      'F' | u32 pathLength | path | u32 permissions | i64 mtimeNs | u64 size | sha256(content)
 *   link:      'L' | u32 pathLength | path | u32 targetLength | target
 *
 * A symbolic link is framed by what it says (its target text, never followed), not by its own
 * timestamps or permission bits: a link recreated with the same target is the same link. Link frames
 * joined version 1 when links stopped being refused; no earlier stamp could hold one.
 *
 * `path` is relative to the root, `/`-separated, in the filesystem's own bytes; `permissions` is
 * `st_mode & 0o7777`. A directory's size is left out: it is an allocation detail of the filesystem.
 */
export const DIGEST_HEADER = 'taskward-workspace-digest v1\n'
export const WORKSPACE_KEY_HEADER = 'taskward-workspace-key v1\n'
/**
 * Headers of the part digests: the same frames as the stamp digest, those of entries outside dependency
 * directories (`own`) or inside them (`dependencies`) only. Recovery reads one part again where only
 * that part could have moved (docs/recovery.md).
 */
export const PART_HEADERS = { own: 'taskward-workspace-part own v1\n', dependencies: 'taskward-workspace-part dependencies v1\n' } as const

const DIRECTORY_TAG = 0x44 // 'D'
const FILE_TAG = 0x46 // 'F'
const LINK_TAG = 0x4c // 'L'
const PERMISSION_BITS = 0o7777
const CONTENT_HASH_LENGTH = 32
const MAX_U32 = 0xffffffff

export interface DirectoryMeta {
  mode: number | bigint
  mtimeNs: bigint
}

export interface FileMeta extends DirectoryMeta {
  size: number | bigint
}

function header(tag: number, path: Uint8Array, meta: DirectoryMeta, extra: number): Buffer {
  if (path.length === 0 || path.length > MAX_U32) {
    throw new TaskwardError('INTERNAL', `A stamp entry path must be 1..${MAX_U32} bytes long; report this as a bug.`)
  }
  const frame = Buffer.allocUnsafe(1 + 4 + path.length + 4 + 8 + extra)
  let at = frame.writeUInt8(tag, 0)
  at = frame.writeUInt32BE(path.length, at)
  frame.set(path, at)
  at += path.length
  at = frame.writeUInt32BE(Number(BigInt(meta.mode) & BigInt(PERMISSION_BITS)), at)
  frame.writeBigInt64BE(meta.mtimeNs, at)
  return frame
}

export function encodeDirectoryFrame(path: Uint8Array, meta: DirectoryMeta): Buffer {
  return header(DIRECTORY_TAG, path, meta, 0)
}

export function encodeFileFrame(path: Uint8Array, meta: FileMeta, contentSha256: Uint8Array): Buffer {
  if (contentSha256.length !== CONTENT_HASH_LENGTH) {
    throw new TaskwardError('INTERNAL', `A file's content hash must be ${CONTENT_HASH_LENGTH} bytes of sha256; report this as a bug.`)
  }
  const frame = header(FILE_TAG, path, meta, 8 + CONTENT_HASH_LENGTH)
  const at = frame.length - 8 - CONTENT_HASH_LENGTH
  frame.writeBigUInt64BE(BigInt(meta.size), at)
  frame.set(contentSha256, at + 8)
  return frame
}

export function encodeLinkFrame(path: Uint8Array, target: Uint8Array): Buffer {
  if (path.length === 0 || path.length > MAX_U32 || target.length > MAX_U32) {
    throw new TaskwardError('INTERNAL', `A stamp link's path must be 1..${MAX_U32} bytes long and its target at most that; report this as a bug.`)
  }
  const frame = Buffer.allocUnsafe(1 + 4 + path.length + 4 + target.length)
  let at = frame.writeUInt8(LINK_TAG, 0)
  at = frame.writeUInt32BE(path.length, at)
  frame.set(path, at)
  at = frame.writeUInt32BE(target.length, at + path.length)
  frame.set(target, at)
  return frame
}

/**
 * Folds frames, in the order they are added, into the stamp digest: the same bytes as hashing each
 * `encode…Frame` in turn, written into one reused batch instead of a new buffer per entry.
 */
export class StampDigest {
  private readonly batch: HashBatch

  constructor(header: string = DIGEST_HEADER) {
    this.batch = new HashBatch(header)
  }

  addDirectory(path: Uint8Array, meta: DirectoryMeta): void {
    this.head(DIRECTORY_TAG, path, meta, 0)
  }

  addFile(path: Uint8Array, meta: FileMeta, contentSha256: Uint8Array): void {
    if (contentSha256.length !== CONTENT_HASH_LENGTH) {
      throw new TaskwardError('INTERNAL', `A file's content hash must be ${CONTENT_HASH_LENGTH} bytes of sha256; report this as a bug.`)
    }
    const { buffer, at } = this.head(FILE_TAG, path, meta, 8 + CONTENT_HASH_LENGTH)
    buffer.writeBigUInt64BE(BigInt(meta.size), at)
    buffer.set(contentSha256, at + 8)
  }

  addLink(path: Uint8Array, target: Uint8Array): void {
    if (path.length === 0 || path.length > MAX_U32 || target.length > MAX_U32) {
      throw new TaskwardError('INTERNAL', `A stamp link's path must be 1..${MAX_U32} bytes long and its target at most that; report this as a bug.`)
    }
    if (1 + 4 + path.length + 4 + target.length > BATCH_BYTES) {
      this.batch.update(encodeLinkFrame(path, target))
      return
    }
    const { buffer, at: start } = this.batch.reserve(1 + 4 + path.length + 4 + target.length)
    let at = buffer.writeUInt8(LINK_TAG, start)
    at = buffer.writeUInt32BE(path.length, at)
    buffer.set(path, at)
    at = buffer.writeUInt32BE(target.length, at + path.length)
    buffer.set(target, at)
  }

  /** The hex digest; the object cannot be used afterwards. */
  hex(): string {
    return this.batch.hex()
  }

  /** Writes a directory or file frame's common fields; returns where its `extra` bytes go. */
  private head(tag: number, path: Uint8Array, meta: DirectoryMeta, extra: number): { buffer: Buffer, at: number } {
    const length = 1 + 4 + path.length + 4 + 8 + extra
    if (path.length === 0 || path.length > MAX_U32) {
      throw new TaskwardError('INTERNAL', `A stamp entry path must be 1..${MAX_U32} bytes long; report this as a bug.`)
    }
    if (length > BATCH_BYTES) {
      // A path longer than the batch (never on Linux, PATH_MAX is 4096): framed on its own.
      const frame = header(tag, path, meta, extra)
      // The caller fills the extra bytes into the batch: keep the frame's head there instead.
      this.batch.update(frame.subarray(0, frame.length - extra))
      return this.batch.reserve(extra)
    }
    const { buffer, at: start } = this.batch.reserve(length)
    let at = buffer.writeUInt8(tag, start)
    at = buffer.writeUInt32BE(path.length, at)
    buffer.set(path, at)
    at += path.length
    at = buffer.writeUInt32BE(Number(BigInt(meta.mode) & BigInt(PERMISSION_BITS)), at)
    return { buffer, at: buffer.writeBigInt64BE(meta.mtimeNs, at) }
  }
}

export interface RootIdentity {
  /** The root's canonical absolute path (symlinks resolved), as bytes or a string (UTF-8). */
  realPath: Uint8Array | string
  dev: number | bigint
  ino: number | bigint
}

/**
 * The workspace key: sha256 hex of `WORKSPACE_KEY_HEADER | u32 pathLength | realPath | u64 dev | u64 ino`.
 * The same content in another directory, or a directory recreated at the same path, is another workspace.
 */
export function workspaceKeyOf(root: RootIdentity): string {
  const path = typeof root.realPath === 'string' ? Buffer.from(root.realPath, 'utf8') : root.realPath
  const tail = Buffer.allocUnsafe(4 + path.length + 16)
  tail.writeUInt32BE(path.length, 0)
  tail.set(path, 4)
  tail.writeBigUInt64BE(BigInt(root.dev), 4 + path.length)
  tail.writeBigUInt64BE(BigInt(root.ino), 12 + path.length)
  return createHash('sha256').update(WORKSPACE_KEY_HEADER).update(tail).digest('hex')
}

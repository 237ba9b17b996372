import { createHash } from 'node:crypto'
import { expect } from 'chai'
import {
  DIGEST_HEADER, encodeDirectoryFrame, encodeFileFrame, encodeLinkFrame, StampDigest, TaskwardError, workspaceKeyOf, WORKSPACE_KEY_HEADER,
} from '../src'

const path = (text: string) => Buffer.from(text, 'utf8')
const sha = (text: string) => createHash('sha256').update(text).digest()

/** Reads a frame back by the documented layout. */
function decode(frame: Buffer) {
  let at = 0
  const tag = String.fromCharCode(frame[at++])
  const length = frame.readUInt32BE(at); at += 4
  const name = frame.subarray(at, at + length).toString('utf8'); at += length
  const permissions = frame.readUInt32BE(at); at += 4
  const mtimeNs = frame.readBigInt64BE(at); at += 8
  if (tag === 'D') return { tag, name, permissions, mtimeNs, rest: frame.length - at }
  const size = frame.readBigUInt64BE(at); at += 8
  const content = frame.subarray(at, at + 32).toString('hex'); at += 32
  return { tag, name, permissions, mtimeNs, size, content, rest: frame.length - at }
}

describe('workspace digest framing', () => {
  const file = { mode: 0o100644, mtimeNs: 1_600_000_000_123_456_789n, size: 5 }

  it('lays out a directory frame as D | u32 length | path | u32 permissions | i64 mtimeNs', () => {
    const frame = encodeDirectoryFrame(path('src/util'), { mode: 0o40755, mtimeNs: -5n })
    expect(decode(frame)).to.deep.equal({ tag: 'D', name: 'src/util', permissions: 0o755, mtimeNs: -5n, rest: 0 })
  })

  it('lays out a file frame with its size and content sha256, keeping only permission bits of the mode', () => {
    const content = sha('hello')
    const frame = encodeFileFrame(path('a.txt'), { ...file, mode: 0o104755 }, content)
    expect(decode(frame)).to.deep.equal({
      tag: 'F', name: 'a.txt', permissions: 0o4755, mtimeNs: file.mtimeNs, size: 5n, content: content.toString('hex'), rest: 0,
    })
  })

  it('accepts bigint modes and sizes as lstat({bigint: true}) reports them', () => {
    const a = encodeFileFrame(path('x'), { mode: 0o100600n, mtimeNs: 1n, size: 3n }, sha('abc'))
    const b = encodeFileFrame(path('x'), { mode: 0o100600, mtimeNs: 1n, size: 3 }, sha('abc'))
    expect(a.equals(b)).to.equal(true)
  })

  it('refuses a content hash that is not 32 bytes and an empty path', () => {
    expect(() => encodeFileFrame(path('x'), file, Buffer.alloc(16))).to.throw(TaskwardError)
    expect(() => encodeDirectoryFrame(new Uint8Array(0), file)).to.throw(TaskwardError)
  })

  it('digests the header followed by the frames in order', () => {
    const digest = new StampDigest()
    digest.addDirectory(path('src'), { mode: 0o40755, mtimeNs: 1n })
    digest.addFile(path('src/a'), file, sha('a'))
    const expected = createHash('sha256')
      .update(DIGEST_HEADER)
      .update(encodeDirectoryFrame(path('src'), { mode: 0o40755, mtimeNs: 1n }))
      .update(encodeFileFrame(path('src/a'), file, sha('a')))
      .digest('hex')
    expect(digest.hex()).to.equal(expected)
  })

  it('lays out a link frame as L | u32 length | path | u32 length | target, without mode or times', () => {
    const frame = encodeLinkFrame(path('node_modules/.bin/tsc'), path('../typescript/bin/tsc'))
    expect(frame[0]).to.equal(0x4c)
    expect(frame.readUInt32BE(1)).to.equal(21)
    expect(frame.subarray(5, 26).toString()).to.equal('node_modules/.bin/tsc')
    expect(frame.readUInt32BE(26)).to.equal(21)
    expect(frame.subarray(30).toString()).to.equal('../typescript/bin/tsc')
  })

  it('digests exactly the frames\' bytes however many entries fill its batches, long paths and targets included', () => {
    const digest = new StampDigest()
    const reference = createHash('sha256').update(DIGEST_HEADER)
    for (let i = 0; i < 5000; i++) {
      const name = path(`dir${i % 7}/${'n'.repeat(i % 300)}${i}`)
      const meta = { mode: 0o100644 + (i % 8), mtimeNs: BigInt(i) * 1_000_003n - 50n }
      if (i % 3 === 0) {
        digest.addDirectory(name, meta)
        reference.update(encodeDirectoryFrame(name, meta))
      } else if (i % 3 === 1) {
        digest.addFile(name, { ...meta, size: i }, sha(String(i)))
        reference.update(encodeFileFrame(name, { ...meta, size: i }, sha(String(i))))
      } else {
        const target = path(`../${'t'.repeat(i % 500)}`)
        digest.addLink(name, target)
        reference.update(encodeLinkFrame(name, target))
      }
      if (i === 2500) {
        // Frames larger than a batch (64 KiB) on their own.
        const long = path('L'.repeat(70_000))
        digest.addFile(long, { ...meta, size: 1 }, sha('x'))
        reference.update(encodeFileFrame(long, { ...meta, size: 1 }, sha('x')))
        digest.addDirectory(long, meta)
        reference.update(encodeDirectoryFrame(long, meta))
        digest.addLink(name, long)
        reference.update(encodeLinkFrame(name, long))
      }
    }
    expect(digest.hex()).to.equal(reference.digest('hex'))
  })

  it('moves the digest with every framed field and with the order of entries', () => {
    const of = (build: (digest: StampDigest) => void) => {
      const digest = new StampDigest()
      build(digest)
      return digest.hex()
    }
    const base = of((d) => d.addFile(path('a'), file, sha('x')))
    const variants = [
      of((d) => d.addFile(path('b'), file, sha('x'))),
      of((d) => d.addFile(path('a'), { ...file, mode: 0o100600 }, sha('x'))),
      of((d) => d.addFile(path('a'), { ...file, mtimeNs: file.mtimeNs + 1n }, sha('x'))),
      of((d) => d.addFile(path('a'), { ...file, size: 6 }, sha('x'))),
      of((d) => d.addFile(path('a'), file, sha('y'))),
      of((d) => d.addDirectory(path('a'), file)),
      of((d) => { d.addFile(path('a'), file, sha('x')); d.addDirectory(path('e'), file) }),
    ]
    expect(new Set([base, ...variants]).size).to.equal(variants.length + 1)
    const ab = of((d) => { d.addDirectory(path('a'), file); d.addDirectory(path('b'), file) })
    const ba = of((d) => { d.addDirectory(path('b'), file); d.addDirectory(path('a'), file) })
    expect(ab).to.not.equal(ba)
  })

  it('derives the workspace key from the real path, device and inode', () => {
    const base = { realPath: '/work/repo', dev: 2049n, ino: 1234n }
    const key = workspaceKeyOf(base)
    const tail = Buffer.alloc(4 + base.realPath.length + 16)
    tail.writeUInt32BE(base.realPath.length, 0)
    tail.write(base.realPath, 4)
    tail.writeBigUInt64BE(base.dev, 4 + base.realPath.length)
    tail.writeBigUInt64BE(base.ino, 12 + base.realPath.length)
    expect(key).to.equal(createHash('sha256').update(WORKSPACE_KEY_HEADER).update(tail).digest('hex'))
    expect(workspaceKeyOf({ ...base, realPath: Buffer.from(base.realPath) })).to.equal(key)
    expect(workspaceKeyOf({ ...base, dev: 2049, ino: 1234 })).to.equal(key)
    const others = [{ ...base, realPath: '/work/repo2' }, { ...base, dev: 2050n }, { ...base, ino: 1235n }].map(workspaceKeyOf)
    expect(new Set([key, ...others]).size).to.equal(4)
  })
})

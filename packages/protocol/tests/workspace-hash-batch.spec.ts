import { createHash } from 'node:crypto'
import { expect } from 'chai'
import { BATCH_BYTES, HashBatch } from '../src/workspace/hash-batch'

describe('HashBatch', () => {
  const frameOf = (length: number, seed: number) => Buffer.alloc(length, seed % 251)

  it('hashes exactly the header and the frames in order while it grows from 1 KB to its largest batch', () => {
    // Frame lengths chosen to cross every growth: larger than the batch held, exactly filling it, one byte over.
    const lengths = [1, 1023, 1, 1024, 3000, 4096, 4097, 16_384, 20_000, BATCH_BYTES, 1, BATCH_BYTES - 1, 2, 7, 65_000, 100]
    for (let i = 0; i < 3000; i++) lengths.push((i * 7919) % 2048)
    const batch = new HashBatch('header\n')
    const reference = createHash('sha256').update('header\n')
    lengths.forEach((length, index) => {
      const frame = frameOf(length, index)
      const { buffer, at } = batch.reserve(length)
      expect(buffer.length - at).to.be.at.least(length)
      frame.copy(buffer, at)
      reference.update(frame)
      // A frame too long for any batch, hashed on its own between batched ones.
      if (index === 5) {
        const long = frameOf(BATCH_BYTES + 10, 99)
        batch.update(long)
        reference.update(long)
      }
    })
    expect(batch.hex()).to.equal(reference.digest('hex'))
  })

  it('keeps what was written before it grows: a reserved frame survives the next reserve', () => {
    const batch = new HashBatch('')
    const first = batch.reserve(1000)
    first.buffer.fill(1, first.at, first.at + 1000)
    // Does not fit the 1 KB batch: the first frame is hashed before the batch is replaced.
    const second = batch.reserve(2000)
    second.buffer.fill(2, second.at, second.at + 2000)
    expect(batch.hex()).to.equal(createHash('sha256').update(Buffer.alloc(1000, 1)).update(Buffer.alloc(2000, 2)).digest('hex'))
  })
})

import { expect } from 'chai'
import { childPath, compareNameBytes, ROOT_EXCLUDED_NAME, walkOrder } from '../src/workspace'

const bytes = (text: string) => Buffer.from(text, 'utf8')
const text = (names: Uint8Array[]) => names.map((name) => Buffer.from(name).toString('utf8'))

describe('workspace walk order', () => {
  it('sorts names by their bytes, not by locale or case folding', () => {
    const names = ['é.txt', 'b', 'B', 'a.b', 'a', '_', 'Z', '10', '9', 'a-b'].map(bytes)
    expect(text(walkOrder(names, false))).to.deep.equal(['10', '9', 'B', 'Z', '_', 'a', 'a-b', 'a.b', 'b', 'é.txt'])
  })

  it('puts a prefix before its extensions and compares raw bytes beyond UTF-8', () => {
    expect(compareNameBytes(bytes('a'), bytes('ab'))).to.be.lessThan(0)
    expect(compareNameBytes(bytes('ab'), bytes('a'))).to.be.greaterThan(0)
    expect(compareNameBytes(bytes('same'), bytes('same'))).to.equal(0)
    expect(compareNameBytes(Uint8Array.of(0x66, 0xfe), Uint8Array.of(0x66, 0xff))).to.be.lessThan(0)
  })

  it('drops .git only at the root', () => {
    const names = ['src', ROOT_EXCLUDED_NAME, '.github', '.gitignore'].map(bytes)
    expect(text(walkOrder(names, true))).to.deep.equal(['.github', '.gitignore', 'src'])
    expect(text(walkOrder(names, false))).to.deep.equal(['.git', '.github', '.gitignore', 'src'])
  })

  it('does not reorder its input', () => {
    const names = ['b', 'a'].map(bytes)
    walkOrder(names, false)
    expect(text(names)).to.deep.equal(['b', 'a'])
  })

  it('joins relative paths with "/" and gives root children no prefix', () => {
    expect(text([childPath(new Uint8Array(0), bytes('src'))])).to.deep.equal(['src'])
    expect(text([childPath(bytes('src/util'), bytes('x.ts'))])).to.deep.equal(['src/util/x.ts'])
  })
})

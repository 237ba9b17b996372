import { expect } from 'chai'
import { bodyText } from '../src/body-text'

/*
 * bodyText claims to be exactly JSON.stringify(body), "odd shapes serialized whole, still exactly".
 * It is not where a value defines toJSON: it serializes each message / head value on its own, so a
 * toJSON that returns undefined becomes the literal text `undefined` (invalid JSON), a body-level toJSON
 * is ignored, and toJSON is handed '' instead of its key.
 */
describe('bodyText with toJSON values', () => {
  const system = { role: 'system', content: 'You are an agent.' }

  it('a message whose toJSON gives undefined is `null`, as JSON.stringify writes it (valid JSON)', () => {
    const body = { model: 'm', messages: [system, { toJSON: () => undefined }] }
    const text = bodyText(body)
    expect(() => JSON.parse(text), text).to.not.throw()
    expect(text).to.equal(JSON.stringify(body))
  })

  it('a head value whose toJSON gives undefined is left out', () => {
    const body = { model: 'm', stream_options: { toJSON: () => undefined }, messages: [system] }
    expect(bodyText(body)).to.equal(JSON.stringify(body))
  })

  it('a body with a toJSON of its own is serialized by it', () => {
    const body = { toJSON: () => ({ model: 'other' }), model: 'm', messages: [system] }
    expect(bodyText(body)).to.equal(JSON.stringify(body))
  })

  it('toJSON is given its key (the index in messages), as JSON.stringify does', () => {
    class Keyed { toJSON(key: string) { return { role: 'user', content: `key ${key}` } } }
    const body = { model: 'm', messages: [system, new Keyed()] }
    expect(bodyText(body)).to.equal(JSON.stringify(body))
  })
})

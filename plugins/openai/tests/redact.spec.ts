import { expect } from 'chai'
import { redact } from '../src/redact'

const KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789'

describe('plugin-openai: redact', function () {
  it('masks the key, a Bearer value and a masked key quoted by the endpoint, and keeps the text around them', () => {
    const masked = `${KEY.slice(0, 8)}${'*'.repeat(20)}${KEY.slice(-4)}`
    expect(redact(`key ${KEY} here`, KEY)).to.equal('key [redacted] here')
    expect(redact('Authorization: Bearer abc.def', KEY)).to.equal('Authorization: Bearer [redacted]')
    expect(redact(`Incorrect API key provided: ${masked}. See the docs.`, KEY)).to.equal('Incorrect API key provided: [redacted]. See the docs.')
    expect(redact(`("${masked}")`, KEY)).to.equal('("[redacted]")')
    expect(redact('a***b.c***d. next', KEY)).to.equal('[redacted]. next')
    expect(redact('only ** two stars', KEY)).to.equal('only ** two stars')
  })

  it('masks a key quoted with dots instead of stars (its prefix, an ellipsis and its tail)', () => {
    expect(redact(`Invalid key ${KEY.slice(0, 6)}...${KEY.slice(-4)}, check it`, KEY)).to.equal('Invalid key [redacted], check it')
    expect(redact(`Invalid key ${KEY.slice(0, 3)}…${KEY.slice(-4)}.`, KEY)).to.equal('Invalid key [redacted].')
    // Dots alone, or another tail, are plain text.
    expect(redact('wait... done', KEY)).to.equal('wait... done')
    expect(redact('sk-ab...zzzz', KEY)).to.equal('sk-ab...zzzz')
    // Dots after the tail (a sentence trailing off) do not hide the masked key before them.
    expect(redact(`Invalid key ${KEY.slice(0, 6)}...${KEY.slice(-4)}... check it`, KEY)).to.equal('Invalid key [redacted]... check it')
    expect(redact(`Invalid key ${KEY.slice(0, 6)}…${KEY.slice(-4)}…`, KEY)).to.equal('Invalid key [redacted]…')
  })

  // An endpoint's error body (or anything logged through the route's logger) is not ours: a long
  // token without a masked key took time quadratic in its length (200 000 characters: about a minute,
  // with the event loop blocked), so a broken or hostile endpoint could stall the whole host.
  it('takes time linear in the text: a 200 000-character token is scanned at once', function () {
    this.timeout(5_000)
    const text = 'x'.repeat(200_000) + '**'
    expect(redact(text, KEY)).to.equal(text)
    const long = 'y'.repeat(200_000) + '***' + 'z'.repeat(10)
    expect(redact(`${long}.`, KEY)).to.equal('[redacted].')
  })
})

import { expect } from 'chai'
import { replyText } from '../src/commands'

/* How DSH shows a command reply: a status reply as its words, anything else as message + JSON. */
describe('DSH adapter: command replies as DSH shows them', () => {
  it('shows a status reply as its statusText only (no JSON block); --json replies stay JSON', () => {
    expect(replyText({ task: { id: 't' }, statusText: 'Task t (revision 1): x\nPhase: planning' })).to.equal('Task t (revision 1): x\nPhase: planning')
    const json = replyText({ task: { id: 't' }, message: 'A repair waits.' })
    expect(json.startsWith('A repair waits.\n\n```json\n')).to.equal(true)
    expect(JSON.parse(json.slice(json.indexOf('{'), json.lastIndexOf('}') + 1))).to.deep.equal({ task: { id: 't' }, message: 'A repair waits.' })
  })
})

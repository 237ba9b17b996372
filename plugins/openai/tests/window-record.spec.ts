import { expect } from 'chai'
import type { SessionEvent } from '@taskward/protocol'
import { readWindowStart, windowRecord } from '../src/window-record'

const ev = (seq: number, data: any): SessionEvent => ({ seq, type: 'model/window', time: 0, data })

describe('window record (pure)', () => {
  it('reads the last start back, with every note recorded since; a note recorded again replaces its earlier record', () => {
    const events = [
      ev(3, { route: 'r', keepFrom: 0, notes: [{ beforeSeq: 3, state: '{"a":1}' }] }),
      { seq: 4, type: 'tool/call', time: 0, data: {} },
      ev(9, { route: 'r', keepFrom: 0, notes: [{ beforeSeq: 9, state: '{"a":2}', base: 3 }] }),
      // The window dropped the note at 3: the one at 9 is shown whole now.
      ev(20, { route: 'r', keepFrom: 8, notes: [{ beforeSeq: 9, state: '{"a":2}' }] }),
      ev(21, { route: 'r', keepFrom: 'x' }),
    ]
    expect(readWindowStart(events)).to.deep.equal({ keepFrom: 8, notes: [{ beforeSeq: 3, state: '{"a":1}' }, { beforeSeq: 9, state: '{"a":2}' }] })
    expect(readWindowStart([])).to.equal(undefined)
  })

  it('records what is new: a moved start, a new note, a note shown otherwise; nothing when nothing changed', () => {
    const known = { keepFrom: 0, notes: [{ beforeSeq: 3, state: 's' }, { beforeSeq: 9, state: 't', base: 3 }] }
    expect(windowRecord(known, known)).to.equal(undefined)
    expect(windowRecord(known, { ...known, keepFrom: 5 })).to.deep.equal({ keepFrom: 5 })
    expect(windowRecord(known, { keepFrom: 5, notes: [{ beforeSeq: 9, state: 't' }] })).to.deep.equal({ keepFrom: 5, notes: [{ beforeSeq: 9, state: 't' }] })
    expect(windowRecord(undefined, { keepFrom: 0, notes: [] })).to.deep.equal({ keepFrom: 0 })
  })
})

import { expect } from 'chai'
import Schema from 'schemastery'
import { TaskwardError } from '../src/errors'
import { RECORD_EVENT_TYPE } from '../src/envelope'
import type { SessionEvent } from '../src/events'
import {
  defineReader, emptyRecordIndex, indexRecordEvent, indexRecordEvents, missingReaders, pairLabel,
  readRecord, readerUnavailable, recordPairs,
} from '../src/records'

const any = { state: { schemas: { 1: Schema.object({ n: Schema.number().required() }) } } }
const tasks1to9 = defineReader({ namespace: 'dsh-task-supervisor', writes: 9, minVersion: 1, kinds: any })
const tasks1to10 = defineReader({ namespace: 'dsh-task-supervisor', writes: 10, minVersion: 1, kinds: any })
const repair = defineReader({ namespace: 'dsh-task-supervisor-repair', writes: 1, minVersion: 1, kinds: { proposal: any.state } })

function record(seq: number, namespace: string, schemaVersion: number, kind = 'state', payload: unknown = { n: seq }): SessionEvent {
  return { seq, type: RECORD_EVENT_TYPE, time: 0, data: { namespace, schemaVersion, kind, recordId: `r${seq}`, payload } }
}
function plain(seq: number, type = 'user/message'): SessionEvent {
  return { seq, type, time: 0, data: { text: `m${seq}` } }
}

const log: SessionEvent[] = [
  plain(0), record(1, 'dsh-task-supervisor', 9), plain(2, 'assistant/message'), record(3, 'dsh-task-supervisor', 10),
  record(4, 'dsh-task-supervisor', 10), record(5, 'dsh-task-supervisor-repair', 1, 'proposal'), plain(6),
]

describe('records: the (namespace, version) index', () => {
  it('holds each pair once with the first seq that used it', () => {
    const index = indexRecordEvents(log)
    expect(index.lastSeq).to.equal(6)
    expect(recordPairs(index)).to.deep.equal([
      { namespace: 'dsh-task-supervisor', schemaVersion: 9, firstSeq: 1 },
      { namespace: 'dsh-task-supervisor', schemaVersion: 10, firstSeq: 3 },
      { namespace: 'dsh-task-supervisor-repair', schemaVersion: 1, firstSeq: 5 },
    ])
  })

  it('is empty for a log without records', () => {
    const index = indexRecordEvents([plain(0), plain(1, 'tool/result')])
    expect(recordPairs(index)).to.deep.equal([])
    expect(index.lastSeq).to.equal(1)
  })

  it('folds incrementally to the same index, without mutating the previous one', () => {
    const half = indexRecordEvents(log.slice(0, 3))
    const before = JSON.stringify(half)
    const full = indexRecordEvents(log.slice(3), half)
    expect(JSON.stringify(half)).to.equal(before)
    expect(full).to.deep.equal(indexRecordEvents(log))
  })

  it('ignores an event it has already folded', () => {
    const index = indexRecordEvents(log)
    expect(indexRecordEvent(index, record(2, 'late', 1))).to.equal(index)
  })

  it('shares the pair map while no new pair appears', () => {
    const index = indexRecordEvents(log)
    const next = indexRecordEvent(indexRecordEvent(index, plain(7)), record(8, 'dsh-task-supervisor', 10))
    expect(next.pairs).to.equal(index.pairs)
    expect(next.lastSeq).to.equal(8)
  })

  it('notes the first record event that is no envelope', () => {
    const index = indexRecordEvents([plain(0), { seq: 1, type: RECORD_EVENT_TYPE, time: 0, data: { kind: 'x' } },
      { seq: 2, type: RECORD_EVENT_TYPE, time: 0, data: null }])
    expect(index.malformedSeq).to.equal(1)
    expect(recordPairs(index)).to.deep.equal([])
  })

  it('survives a JSON round trip (it is cached in the database)', () => {
    const index = indexRecordEvents(log)
    expect(indexRecordEvent(JSON.parse(JSON.stringify(index)), plain(7))).to.deep.equal(indexRecordEvent(index, plain(7)))
    expect(JSON.parse(JSON.stringify(emptyRecordIndex()))).to.deep.equal(emptyRecordIndex())
  })
})

describe('records: missing readers', () => {
  const pairs = recordPairs(indexRecordEvents(log))

  it('finds nothing missing when every pair has a reader', () => {
    expect(missingReaders(pairs, [tasks1to10, repair])).to.deep.equal([])
  })

  it('names v10 when the task reader reads only 1–9', () => {
    expect(missingReaders(pairs, [tasks1to9, repair]).map(pairLabel)).to.deep.equal(['dsh-task-supervisor v10'])
  })

  it('names the repair namespace when it has no reader', () => {
    expect(missingReaders(pairs, [tasks1to10]).map(pairLabel)).to.deep.equal(['dsh-task-supervisor-repair v1'])
  })

  it('names every pair when there are no readers, and nothing for a session without records', () => {
    expect(missingReaders(pairs, [])).to.have.length(3)
    expect(missingReaders([], [])).to.deep.equal([])
  })

  it('builds a READER_UNAVAILABLE refusal naming each pair and what to do', () => {
    const error = readerUnavailable('s1', missingReaders(pairs, [tasks1to9]))
    expect(error.code).to.equal('READER_UNAVAILABLE')
    expect(error.message).to.contain('dsh-task-supervisor v10').and.contain('dsh-task-supervisor-repair v1')
    expect(error.message).to.match(/Install or enable a plugin/)
    expect(error.details).to.deep.equal({ sessionId: 's1', missing: [
      { namespace: 'dsh-task-supervisor', schemaVersion: 10, firstSeq: 3 },
      { namespace: 'dsh-task-supervisor-repair', schemaVersion: 1, firstSeq: 5 },
    ] })
  })
})

describe('records: readRecord over several readers', () => {
  const readers = [tasks1to9, tasks1to10, repair]

  it('reads with the reader whose range holds the version', () => {
    expect(readRecord(readers, record(3, 'dsh-task-supervisor', 10))).to.include({ schemaVersion: 10, seq: 3 })
    expect(readRecord(readers, record(5, 'dsh-task-supervisor-repair', 1, 'proposal')).payload).to.deep.equal({ n: 5 })
  })

  it('answers READER_UNAVAILABLE for a namespace without a reader', () => {
    expect(() => readRecord([tasks1to10], record(5, 'dsh-task-supervisor-repair', 1, 'proposal')))
      .to.throw(TaskwardError).with.property('code', 'READER_UNAVAILABLE')
  })

  it('answers RECORD_UNSUPPORTED with the seq for a version, kind or payload it cannot read', () => {
    for (const [event, seq] of [
      [record(12, 'dsh-task-supervisor', 10), 12],
      [record(13, 'dsh-task-supervisor', 4, 'mystery'), 13],
      [record(14, 'dsh-task-supervisor', 4, 'state', { n: 'NaN' }), 14],
    ] as const) {
      let caught: any
      try {
        readRecord([tasks1to9], event)
      } catch (error) {
        caught = error
      }
      expect(caught?.code).to.equal('RECORD_UNSUPPORTED')
      expect(caught.details.seq).to.equal(seq)
    }
  })

  it('answers RECORD_UNSUPPORTED for an event that is no record envelope', () => {
    expect(() => readRecord(readers, plain(4))).to.throw(TaskwardError).with.property('code', 'RECORD_UNSUPPORTED')
    expect(() => readRecord(readers, { seq: 8, type: RECORD_EVENT_TYPE, time: 0, data: { namespace: 'x' } }))
      .to.throw(/seq 8/)
  })
})

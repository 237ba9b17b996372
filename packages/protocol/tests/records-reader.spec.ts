import { expect } from 'chai'
import Schema from 'schemastery'
import { TaskwardError } from '../src/errors'
import { defineReader, optional, writeVersionOf } from '../src/records'

/**
 * A 1–10 reader for a made-up namespace whose shape changed on the way: v1 `{id, title}`; v3 adds the
 * optional `tags` (array) and `owner` (object); v6 renames `title` → `name`; v9 adds the optional
 * `cycle`; v10 adds the optional `completedAt`.
 */
const v1 = Schema.object({ id: Schema.string().required(), title: Schema.string().required() })
const v3 = Schema.object({
  id: Schema.string().required(),
  title: Schema.string().required(),
  tags: optional(Schema.array(Schema.string())),
  owner: optional(Schema.object({ name: Schema.string().required() })),
})
const v6 = Schema.object({
  id: Schema.string().required(),
  name: Schema.string().required(),
  tags: optional(Schema.array(Schema.string())),
  owner: optional(Schema.object({ name: Schema.string().required() })),
})
const v9 = Schema.object({
  id: Schema.string().required(),
  name: Schema.string().required(),
  tags: optional(Schema.array(Schema.string())),
  owner: optional(Schema.object({ name: Schema.string().required() })),
  cycle: Schema.natural().min(1),
})
const v10 = Schema.object({
  id: Schema.string().required(),
  name: Schema.string().required(),
  tags: optional(Schema.array(Schema.string())),
  owner: optional(Schema.object({ name: Schema.string().required() })),
  cycle: Schema.natural().min(1),
  completedAt: Schema.number(),
})

function renameTitle(payload: any) {
  const { title, ...rest } = payload
  return { ...rest, name: title }
}

const notes = defineReader({
  namespace: 'test-notes',
  writes: 10,
  minVersion: 1,
  kinds: {
    state: { schemas: { 1: v1, 3: v3, 6: v6, 9: v9, 10: v10 }, upgrades: { 5: renameTitle } },
  },
})

const envelope = (schemaVersion: number, payload: unknown, kind = 'state') =>
  ({ namespace: 'test-notes', schemaVersion, kind, recordId: `n-${schemaVersion}`, payload })

function unsupported(fn: () => unknown): TaskwardError {
  try {
    fn()
  } catch (error) {
    expect(error).to.be.instanceOf(TaskwardError)
    expect((error as TaskwardError).code).to.equal('RECORD_UNSUPPORTED')
    return error as TaskwardError
  }
  expect.fail('expected RECORD_UNSUPPORTED')
}

describe('records: a 1–10 reader', () => {
  it('reads a v3 record into today\'s shape with absent fields still absent', () => {
    const read = notes.read(envelope(3, { id: 'a', title: 'Old note' }), 42)
    expect(read).to.deep.equal({
      namespace: 'test-notes', schemaVersion: 3, kind: 'state', recordId: 'n-3', seq: 42,
      payload: { id: 'a', name: 'Old note' },
    })
    // Neither the optional array/object (schemastery would default them to []/{}) nor the later fields.
    expect(read.payload).not.to.have.any.keys('tags', 'owner', 'cycle', 'completedAt', 'title')
  })

  it('keeps the optional fields a v3 record does have', () => {
    const read = notes.read(envelope(3, { id: 'b', title: 'Tagged', tags: ['x'], owner: { name: 'ann' } }), 7)
    expect(read.payload).to.deep.equal({ id: 'b', name: 'Tagged', tags: ['x'], owner: { name: 'ann' } })
  })

  it('reads a v10 record as written', () => {
    const payload = { id: 'c', name: 'New', cycle: 2, completedAt: 1700000000000 }
    expect(notes.read(envelope(10, payload), 3).payload).to.deep.equal(payload)
  })

  it('does not touch the event data it reads', () => {
    const data = Object.freeze({ id: 'd', title: 'Frozen' })
    const env = envelope(2, data)
    notes.read(env, 1)
    expect(env.payload).to.deep.equal({ id: 'd', title: 'Frozen' })
  })

  it('reports its range', () => {
    expect([notes.minVersion, notes.maxVersion, notes.reads(1), notes.reads(10), notes.reads(11), notes.reads(0)])
      .to.deep.equal([1, 10, true, true, false, false])
  })

  it('refuses an invalid payload with RECORD_UNSUPPORTED naming namespace, version, kind and seq', () => {
    const error = unsupported(() => notes.read(envelope(3, { id: 'e', tags: 'not-an-array' }), 17))
    expect(error.details).to.deep.equal({ namespace: 'test-notes', schemaVersion: 3, kind: 'state', seq: 17 })
    expect(error.message).to.contain('seq 17')
  })

  it('refuses a version outside its range with RECORD_UNSUPPORTED and the seq', () => {
    const error = unsupported(() => notes.read(envelope(11, { id: 'f', name: 'Future' }), 23))
    expect(error.details).to.include({ schemaVersion: 11, seq: 23 })
    expect(error.message).to.contain('11')
  })

  it('refuses an unknown kind with RECORD_UNSUPPORTED and the seq', () => {
    const error = unsupported(() => notes.read(envelope(10, { id: 'g', name: 'x' }, 'mystery'), 5))
    expect(error.details).to.include({ kind: 'mystery', seq: 5 })
  })

  it('refuses a record of another namespace', () => {
    const error = unsupported(() => notes.read({ ...envelope(1, { id: 'h', title: 'x' }), namespace: 'other' }, 9))
    expect(error.details).to.include({ namespace: 'other', seq: 9 })
  })
})

describe('records: a kind unchanged since an older version', () => {
  const shape = Schema.object({ n: Schema.number().required() })
  const changed = Schema.object({ m: Schema.number().required() })
  let todayCalls = 0
  const today = (p: unknown) => { todayCalls++; return typeof (p as any)?.n === 'number' && Object.keys(p as object).length === 1 }
  const spec = {
    namespace: 'test-kinds', writes: 3, minVersion: 1,
    kinds: {
      old: { schemas: { 1: shape }, today },
      renamed: { schemas: { 1: changed, 2: shape }, upgrades: { 1: (p: any) => ({ n: p.m }) }, today },
      added: { schemas: { 3: shape }, today },
    },
  }
  const reader = defineReader(spec)
  const env = (kind: string, schemaVersion: number, payload: unknown) => ({ namespace: 'test-kinds', schemaVersion, kind, recordId: 'r', payload })

  it('is written at the lowest version already in today\'s shape', () => {
    expect(writeVersionOf(spec, 'old')).to.equal(1)
    expect(writeVersionOf(spec, 'renamed')).to.equal(2)
    expect(writeVersionOf(spec, 'added')).to.equal(3)
    expect(() => writeVersionOf(spec, 'constructor')).to.throw(TaskwardError)
    expect(writeVersionOf({ ...spec, kinds: { ...spec.kinds, old: { ...spec.kinds.old, writesAt: 3 } } }, 'old')).to.equal(3)
  })

  it('is read by the fast path from that version on, and through its upgrades below it', () => {
    todayCalls = 0
    expect(reader.read(env('old', 1, { n: 1 }), 1).payload).to.deep.equal({ n: 1 })
    expect(reader.read(env('renamed', 2, { n: 2 }), 2).payload).to.deep.equal({ n: 2 })
    expect(todayCalls).to.equal(2)
    expect(reader.read(env('renamed', 1, { m: 3 }), 3).payload).to.deep.equal({ n: 3 })
    expect(todayCalls).to.equal(2)
    expect(() => reader.read(env('added', 2, { n: 4 }), 4)).to.throw(/no schema for version 2/)
  })
})

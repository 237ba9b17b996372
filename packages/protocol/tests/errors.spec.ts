import { expect } from 'chai'
import {
  asTaskwardError, CODED_STACKS, defineErrorCode, errorBody, errorResult, httpStatusOf, isErrorCode, TaskwardError, type ErrorCode,
} from '@taskward/protocol'

/** The same source loaded as a second module instance: what an ESM + CJS pair of a package amounts to. */
async function secondCopy(): Promise<typeof import('../src/errors')> {
  return import(`../src/errors.ts?copy=${Math.random()}`)
}

describe('protocol: error codes open to plugins', () => {
  it('defines a namespaced plugin code with its HTTP status; httpStatusOf knows it', () => {
    const code = defineErrorCode('acme.changelog_missing', 422)
    expect(code).to.equal('acme.changelog_missing')
    expect(isErrorCode(code)).to.equal(true)
    expect(httpStatusOf(code)).to.equal(422)
    const error = new TaskwardError(code, 'Add a CHANGELOG entry.', { file: 'CHANGELOG.md' })
    expect(TaskwardError.is(error, 'acme.changelog_missing')).to.equal(true)
    expect(TaskwardError.is(error, 'TASK_INVALID')).to.equal(false)
  })

  it('refuses malformed codes, unnamespaced codes and statuses outside 400–599 with CONFIG_INVALID', () => {
    for (const bad of ['CHANGELOG_MISSING', 'acme', 'Acme.missing', 'acme.', '.missing', 'acme.missing.more', 'acme missing.x', 'acme.Missing']) {
      expect(() => defineErrorCode(bad as any, 409), bad).to.throw(TaskwardError).with.property('code', 'CONFIG_INVALID')
    }
    for (const status of [200, 399, 600, 409.5, NaN]) {
      expect(() => defineErrorCode('acme.bad_status', status), String(status)).to.throw(TaskwardError).with.property('code', 'CONFIG_INVALID')
    }
    expect(isErrorCode('acme.bad_status')).to.equal(false)
  })

  it('lets a code be defined again with the same status, never with another one', () => {
    defineErrorCode('acme.twice', 409)
    expect(defineErrorCode('acme.twice', 409)).to.equal('acme.twice')
    expect(() => defineErrorCode('acme.twice', 400)).to.throw(/already defined with HTTP status 409/)
    expect(httpStatusOf('acme.twice')).to.equal(409)
  })

  it('answers an undefined dotted code with 500 (a bug), known codes with their fixed status', () => {
    expect(httpStatusOf('nobody.defined_this')).to.equal(500)
    expect(httpStatusOf('TASK_NOT_FOUND')).to.equal(404)
    expect(httpStatusOf('ACTIVE_TASK_CONFLICT')).to.equal(409)
    expect(TaskwardError.is(Object.assign(new Error('x'), { name: 'TaskwardError', code: 'nobody.defined_this' }))).to.equal(false)
  })

  it('recognises errors of another module copy, plugin codes included, in both directions', async () => {
    const other = await secondCopy()
    expect(other.TaskwardError).to.not.equal(TaskwardError)
    // A code defined through one copy is known to the other: the registry is shared.
    other.defineErrorCode('acme.cross_copy', 412)
    expect(httpStatusOf('acme.cross_copy')).to.equal(412)
    const foreign = new other.TaskwardError('acme.cross_copy', 'from the other copy', { n: 1 })
    expect(foreign instanceof TaskwardError).to.equal(false)
    expect(TaskwardError.is(foreign, 'acme.cross_copy')).to.equal(true)
    expect(asTaskwardError(foreign)).to.equal(foreign)
    expect(errorResult(asTaskwardError(foreign))).to.deep.equal({ code: 'acme.cross_copy', message: 'from the other copy', details: { n: 1 } })
    const ours = new TaskwardError('TASK_STALE', 'ours')
    expect(other.TaskwardError.is(ours, 'TASK_STALE')).to.equal(true)
  })

  it('keeps details in errorResult, errorBody and toJSON, and leaves the key out when there are none', () => {
    const withDetails = new TaskwardError('ACTIVE_TASK_CONFLICT', 'busy', { activeTaskId: 't1' })
    expect(errorResult(withDetails)).to.deep.equal({ code: 'ACTIVE_TASK_CONFLICT', message: 'busy', details: { activeTaskId: 't1' } })
    expect(errorBody(withDetails)).to.deep.equal({ error: 'busy', code: 'ACTIVE_TASK_CONFLICT', details: { activeTaskId: 't1' } })
    expect(JSON.parse(JSON.stringify(withDetails))).to.deep.equal(errorBody(withDetails))
    expect(errorResult(new TaskwardError('INTERNAL', 'x'))).to.not.have.property('details')
  })

  it('types known codes and namespaced plugin codes, and rejects others at compile time', () => {
    const known: ErrorCode = 'TASK_STALE'
    const plugin: ErrorCode = 'acme.changelog_missing'
    // @ts-expect-error an unnamespaced code Taskward does not define is not an ErrorCode
    const unknown: ErrorCode = 'CHANGELOG_MISSING'
    expect([known, plugin, unknown]).to.have.length(3)
  })
})

describe('protocol: coded stacks for an operator\'s log', () => {
  const flag = globalThis as Record<symbol, unknown>
  afterEach(() => { delete flag[CODED_STACKS] })

  it('with CODED_STACKS set, a TaskwardError\'s stack is its one line CODE: message; INTERNAL and other errors keep theirs', async () => {
    expect(new TaskwardError('STORE_CORRUPT', 'damaged').stack).to.match(/^TaskwardError: damaged\n\s+at /)
    flag[CODED_STACKS] = true
    expect(new TaskwardError('STORE_CORRUPT', 'damaged').stack).to.equal('STORE_CORRUPT: damaged')
    // A copy of the module (the ESM and CJS builds) reads the same flag.
    const copy = await secondCopy()
    expect(new copy.TaskwardError('CONFIG_INVALID', 'bad key').stack).to.equal('CONFIG_INVALID: bad key')
    expect(new TaskwardError('INTERNAL', 'a bug').stack).to.match(/^TaskwardError: a bug\n\s+at /)
    expect(new Error('a bug').stack).to.match(/^Error: a bug\n\s+at /)
  })
})

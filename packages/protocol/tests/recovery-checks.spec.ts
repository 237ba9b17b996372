import { expect } from 'chai'
import {
  aggregateVerdict, BudgetsSchema, checkResultOf, CheckResult, failureLines, failureSignature, OUTPUT_EXCERPT_MAX,
  progressDelta, SIGNATURE_MAX_LINES, TaskwardError, validateCheckSpec, validateCheckSpecs,
} from '../src'

const spec = { id: 'unit', argv: ['npm', 'test'], timeoutMs: 1000 }

function refusal(fn: () => unknown): TaskwardError {
  try {
    fn()
  } catch (error) {
    if (error instanceof TaskwardError) return error
    throw error
  }
  throw new Error('expected a refusal')
}

describe('recovery checks', () => {
  it('accepts argv arrays and fills the default timeout', () => {
    expect(validateCheckSpec({ id: 'unit', argv: ['npm', 'test'] })).to.deep.equal({ id: 'unit', argv: ['npm', 'test'], timeoutMs: 600_000 })
    expect(validateCheckSpecs([])).to.deep.equal([])
  })

  it('refuses shell strings, empty or non-string argv, bad ids, bad timeouts and duplicate ids', () => {
    const shell = refusal(() => validateCheckSpec({ id: 'unit', argv: 'npm test && npm run lint' }))
    expect(shell.code).to.equal('CONFIG_INVALID')
    expect(shell.message).to.match(/shell string/)
    for (const bad of [
      { id: 'unit', argv: [] }, { id: 'unit', argv: ['npm', 3] }, { id: 'unit', argv: [''] }, { id: 'unit' },
      { id: 'has space', argv: ['x'] }, { argv: ['x'] }, { id: 'unit', argv: ['x'], timeoutMs: 0 }, { id: 'unit', argv: ['x'], timeoutMs: 1.5 },
      null, 'npm test',
    ]) {
      expect(refusal(() => validateCheckSpec(bad)).code, JSON.stringify(bad)).to.equal('CONFIG_INVALID')
    }
    expect(refusal(() => validateCheckSpecs([{ id: 'a', argv: ['x'] }, { id: 'a', argv: ['y'] }])).code).to.equal('CONFIG_INVALID')
    expect(refusal(() => validateCheckSpecs('npm test')).code).to.equal('CONFIG_INVALID')
  })

  it('classifies runs: exit 0 passes, non-zero and timeout fail, signals and runner faults are inconclusive', () => {
    expect(checkResultOf(spec, { exitCode: 0, durationMs: 5, output: 'ok' })).to.include({ verdict: 'PASS', exitCode: 0 })
    const failed = checkResultOf(spec, { exitCode: 2, durationMs: 5, output: 'boom' })
    expect(failed).to.include({ verdict: 'FAIL', signature: failureSignature('unit', 'boom') })
    expect(checkResultOf(spec, { signal: 'SIGTERM', timedOut: true, durationMs: 1000, output: '' })).to.include({ verdict: 'FAIL', reason: 'timeout' })
    expect(checkResultOf(spec, { signal: 'SIGKILL', durationMs: 5, output: '' })).to.include({ verdict: 'INCONCLUSIVE', reason: 'killed' })
    expect(checkResultOf(spec, { runnerError: 'not-runnable', durationMs: 0, output: 'ENOENT' })).to.include({ verdict: 'INCONCLUSIVE', reason: 'not-runnable' })
    expect(checkResultOf(spec, { runnerError: 'runner-fault', durationMs: 0, output: '' })).to.include({ verdict: 'INCONCLUSIVE', reason: 'runner-fault' })
    const long = checkResultOf(spec, { exitCode: 1, durationMs: 5, output: 'x'.repeat(OUTPUT_EXCERPT_MAX) + 'TAIL' })
    expect(long.outputExcerpt).to.have.length(OUTPUT_EXCERPT_MAX)
    expect(long.outputExcerpt!.endsWith('TAIL')).to.equal(true)
  })
})

describe('recovery failure signatures', () => {
  it('ignores case, whitespace, numbers, hex, blank lines and line order', () => {
    const a = 'FAIL  test/a.spec.ts:12\n\n  Expected 3 got 4 (took 35ms) at 0xdeadbeef\nhash 1a2b3c4d5e6f7a8b'
    const b = 'hash 99aa88bb77cc66dd\nfail test/a.spec.ts:40\n expected 5 got 6 (took 120ms) at 0x1234'
    expect(failureSignature('unit', a)).to.equal(failureSignature('unit', b))
    expect(failureSignature('unit', a)).to.match(/^[0-9a-f]{64}$/)
  })

  it('differs by check id and by failure text', () => {
    expect(failureSignature('unit', 'boom')).to.not.equal(failureSignature('lint', 'boom'))
    expect(failureSignature('unit', 'expected foo')).to.not.equal(failureSignature('unit', 'expected bar'))
  })

  it('replaces the temporary copy root so runs in different copies agree', () => {
    const one = failureSignature('unit', 'Error in /tmp/check-QxZkpL/src/a.ts', { roots: ['/tmp/check-QxZkpL'] })
    const two = failureSignature('unit', 'Error in /tmp/check-mMnopR/src/a.ts', { roots: ['/tmp/check-mMnopR'] })
    expect(one).to.equal(two)
  })

  it('keeps a bounded number of the last lines', () => {
    const head = Array.from({ length: 50 }, (_, i) => `early noise ${String.fromCharCode(97 + (i % 26))}${i}`).join('\n')
    const tail = Array.from({ length: SIGNATURE_MAX_LINES }, (_, i) => `line ${'x'.repeat(i % 7)} ${String.fromCharCode(97 + (i % 26))}`).join('\n')
    expect(failureLines(`${head}\n${tail}`).length).to.be.at.most(SIGNATURE_MAX_LINES)
    expect(failureSignature('unit', `${head}\n${tail}`)).to.equal(failureSignature('unit', `other early lines\n${tail}`))
  })
})

describe('recovery verdicts, deltas and budgets', () => {
  const pass = (id: string): CheckResult => ({ checkId: id, verdict: 'PASS', durationMs: 1 })
  const fail = (id: string, out = 'x'): CheckResult => ({ checkId: id, verdict: 'FAIL', durationMs: 1, signature: failureSignature(id, out) })
  const unsure = (id: string): CheckResult => ({ checkId: id, verdict: 'INCONCLUSIVE', durationMs: 1, reason: 'killed' })

  it('aggregates: MISSING without checks, FAIL dominates, incomplete is INCONCLUSIVE', () => {
    expect(aggregateVerdict([], 0)).to.equal('MISSING')
    expect(aggregateVerdict([pass('a')], 0)).to.equal('MISSING')
    expect(aggregateVerdict([unsure('a'), fail('b')], 2)).to.equal('FAIL')
    expect(aggregateVerdict([unsure('a'), pass('b')], 2)).to.equal('INCONCLUSIVE')
    expect(aggregateVerdict([pass('a')], 2)).to.equal('INCONCLUSIVE')
    expect(aggregateVerdict([], 1)).to.equal('INCONCLUSIVE')
    expect(aggregateVerdict([pass('a'), pass('b')], 2)).to.equal('PASS')
  })

  it('measures progress by objective deltas only', () => {
    const at = (digest: string, checks: CheckResult[]) => ({ candidate: { digest }, checks })
    expect(progressDelta(undefined, at('a', [fail('u')]))).to.deep.equal({ newPass: [], changedFailure: true, regression: [], candidateChanged: true, progress: true })
    expect(progressDelta(at('a', [fail('u')]), at('a', [pass('u')])).progress).to.equal(true)
    expect(progressDelta(at('a', [fail('u', 'one')]), at('a', [fail('u', 'two')]))).to.include({ changedFailure: true, candidateChanged: false, progress: false })
    expect(progressDelta(at('a', [fail('u')]), at('b', [fail('u')]))).to.include({ changedFailure: false, candidateChanged: true, progress: false })
    const regressed = progressDelta(at('a', [pass('u'), fail('v')]), at('a', [fail('u'), pass('v')]))
    expect(regressed).to.include({ progress: false })
    expect(regressed.regression).to.deep.equal(['u'])
  })

  it('fills budget defaults and refuses invalid budgets', () => {
    expect(BudgetsSchema({ maxAttempts: 3 })).to.include({ maxAttempts: 3, maxTotalSteps: 300, maxVerifyReruns: 5 })
    expect(() => BudgetsSchema({ stagnationIdenticalRounds: 1 })).to.throw()
  })
})

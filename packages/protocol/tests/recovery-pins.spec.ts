import { expect } from 'chai'
import {
  comparePinnedSets, decide, foldRecovery, impliedPins, initRecoveryState, needsPinBaseline, pinChangedResult, PinMatcher,
  pinnedSetDigest, RECORD_EVENT_TYPE, recoveryReader, recoveryRecord, stopsAfterProgress, TaskwardError, validateCheckSpec,
  type PinnedFile, type SessionEvent,
} from '../src'

const event = (seq: number, data: unknown): SessionEvent => ({ seq, type: RECORD_EVENT_TYPE, time: 1, data })
const spec = (argv: string[], pin?: string[]) => ({ id: 'test', argv, timeoutMs: 1000, ...pin ? { pin } : {} })
const sha = (c: string) => c.repeat(64)

describe('recovery: pinned checks (pure parts)', () => {
  it('implies the program a check runs when it lives in the workspace, and nothing for programs on PATH or inline code', () => {
    expect(impliedPins(spec(['npm', 'test']))).to.deep.equal(['package.json'])
    expect(impliedPins(spec(['./run-tests.sh']))).to.deep.equal(['run-tests.sh'])
    expect(impliedPins(spec(['bin/check', '--all']))).to.deep.equal(['bin/check'])
    expect(impliedPins(spec(['node', '--', 'test/run.js']))).to.deep.equal(['test/run.js'])
    expect(impliedPins(spec(['sh', 'scripts/check.sh']))).to.deep.equal(['scripts/check.sh'])
    expect(impliedPins(spec(['make', 'check']))).to.deep.equal(['Makefile', 'makefile', 'GNUmakefile'])
    expect(impliedPins(spec(['sh', '-c', 'exit 0']))).to.deep.equal([])
    expect(impliedPins(spec(['/usr/bin/env', 'true']))).to.deep.equal([])
    expect(impliedPins(spec(['cargo', 'test']))).to.deep.equal([])
    expect(impliedPins(spec(['../elsewhere/run']))).to.deep.equal([])
  })

  it('matches canonical workspace paths with globs (dotfiles included) and names the check and pattern', () => {
    const matcher = new PinMatcher([spec(['npm', 'test'], ['test/**']), { id: 'lint', argv: ['true'], timeoutMs: 1, pin: ['.eslintrc*'] }])
    expect(matcher.hits('package.json')).to.deep.equal([{ checkId: 'test', pattern: 'package.json' }])
    expect(matcher.hits('./test/../package.json')).to.have.length(1)
    expect(matcher.hits('test/a/.hidden.js')).to.deep.equal([{ checkId: 'test', pattern: 'test/**' }])
    expect(matcher.hits('.eslintrc.json')).to.deep.equal([{ checkId: 'lint', pattern: '.eslintrc*' }])
    expect(matcher.hits('src/index.js')).to.deep.equal([])
    expect(matcher.hits('../package.json')).to.deep.equal([])
    expect(matcher.mayContain('test/a')).to.equal(true)
    expect(matcher.mayContain('src')).to.equal(false)
    expect(matcher.only('lint').hits('package.json')).to.deep.equal([])
  })

  it('refuses pins that leave the workspace, negate or are empty (PATTERN_REJECTED)', () => {
    for (const pin of [['../x'], ['/etc/passwd'], ['!test/**'], [''], ['a/../../b'], ['.']]) {
      expect(() => validateCheckSpec(spec(['npm', 'test'], pin)), JSON.stringify(pin)).to.throw(TaskwardError).with.property('code', 'PATTERN_REJECTED')
    }
    expect(validateCheckSpec(spec(['npm', 'test'], ['./test/**', 'test/**'])).pin).to.deep.equal(['test/**'])
    expect(validateCheckSpec(spec(['npm', 'test']))).to.not.have.property('pin')
  })

  it('compares pinned sets: modified, deleted and added files, restricted to one check', () => {
    const before: PinnedFile[] = [{ path: 'package.json', hash: sha('a') }, { path: 'test/a.js', hash: sha('b') }, { path: 'test/b.js', hash: sha('c') }]
    const after: PinnedFile[] = [{ path: 'package.json', hash: sha('d') }, { path: 'test/b.js', hash: sha('c') }, { path: 'test/c.js', hash: sha('e') }]
    expect(comparePinnedSets(before, after)).to.deep.equal([
      { path: 'package.json', change: 'modified' }, { path: 'test/a.js', change: 'deleted' }, { path: 'test/c.js', change: 'added' },
    ])
    expect(comparePinnedSets(before, before)).to.deep.equal([])
    const onlyTests = new PinMatcher([{ id: 't', argv: ['true'], timeoutMs: 1, pin: ['test/**'] }])
    expect(comparePinnedSets(before, after, onlyTests).map((c) => c.path)).to.deep.equal(['test/a.js', 'test/c.js'])
    expect(pinnedSetDigest(before)).to.equal(pinnedSetDigest([...before].reverse()))
    expect(pinnedSetDigest(before)).to.not.equal(pinnedSetDigest(after))
  })

  it('a changed pin is INCONCLUSIVE and STOPs with pin_changed before anything else — never COMPLETE', () => {
    const files = [{ path: 'package.json', hash: sha('a') }]
    let state = foldRecovery(initRecoveryState(), event(0, recoveryRecord('pins', 'p', { taskId: 't', files, digest: pinnedSetDigest(files), reason: 'task-start', at: 1 })))
    expect(state.tasks.t.pinBaseline).to.deep.include({ digest: pinnedSetDigest(files), seq: 0 })
    expect(state.tasks.t.pinBaseline).to.not.have.property('acceptanceCycle')
    const changed = pinChangedResult({ id: 'test' }, [{ path: 'package.json', change: 'modified' }])
    state = foldRecovery(state, event(1, recoveryRecord('attempt', 't-a1', {
      attemptId: 't-a1', taskId: 't', index: 1, candidate: { digest: sha('f'), source: 'workspace' }, configuredChecks: ['test', 'other'],
      checks: [changed, { checkId: 'other', verdict: 'PASS', durationMs: 1 }], agentClaim: 'done', strategy: 0, recordedAt: 1,
    })))
    expect(state.poisoned).to.equal(undefined)
    const decision = decide(state, {}, { taskId: 't', at: 2, completionRequested: true })
    expect(decision).to.include({ action: 'STOP', stopReason: 'pin_changed', reason: 'CHECK_PIN_CHANGED', verdict: 'INCONCLUSIVE' })
    expect(decision.journal).to.deep.equal([])
    expect(stopsAfterProgress(decision)).to.equal(true)
  })

  it('reads pins records without fabricating, and poisons a digest that does not match its files', () => {
    const files = [{ path: 'a', hash: 'link:b' }]
    const record = recoveryRecord('pins', 'p', { taskId: 't', files, digest: pinnedSetDigest(files), reason: 'accepted', at: 1 })
    expect(recoveryReader.read(record, 0).payload).to.deep.equal({ taskId: 't', files, digest: pinnedSetDigest(files), reason: 'accepted', at: 1 })
    const bad = recoveryRecord('pins', 'p', { taskId: 't', files, digest: sha('0'), reason: 'accepted', at: 1 })
    expect(foldRecovery(initRecoveryState(), event(4, bad)).poisoned?.seq).to.equal(4)
  })

  it('re-stamps when a task becomes active without a baseline or in a new acceptance cycle, never on resume', () => {
    expect(needsPinBaseline({ phase: 'active' })).to.equal('task-start')
    expect(needsPinBaseline({ phase: 'active' }, {})).to.equal(undefined)
    expect(needsPinBaseline({ phase: 'active', acceptanceCycle: 2 }, {})).to.equal('reopen')
    expect(needsPinBaseline({ phase: 'active', acceptanceCycle: 2 }, { acceptanceCycle: 2 })).to.equal(undefined)
    expect(needsPinBaseline({ phase: 'planning' })).to.equal(undefined)
  })
})

/*
 * The recovery reader's `today` fast paths (recovery/today.ts) must read exactly what its schemas
 * read: the same value, or the same RECORD_UNSUPPORTED refusal. Recovery kinds have no `canonical`, so
 * the fast path hands back a plain copy of the payload: a predicate that accepted anything the schema
 * refuses, or changes (a default filled in, an unknown key moved into the prototype, an array's extra
 * key dropped), would show here. Compared over the recovery records of the golden logs and over built
 * examples of every kind with every optional field, each mutated field by field, at both versions.
 */
import { expect } from 'chai'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { inspect, isDeepStrictEqual } from 'node:util'
import type { RecordEnvelope } from '../src/envelope'
import type { SessionEvent } from '../src/events'
import { bothWays, editedCopy, paths } from './fixtures/fast-path'
import {
  foldRecoveryLog, MAX_PINNED_FILES, pinnedSetDigest, RECOVERY_NAMESPACE, recoveryReader, type RecoveryKind, type RecoveryPayloads,
} from '../src/recovery'
import { RECOVERY_TODAY } from '../src/recovery/today'


/** Strictly equal, by `isDeepStrictEqual`: chai's deep equality overlooks an array's non-index keys. */
function expectEqual(actual: unknown, expected: unknown, label: () => string) {
  if (!isDeepStrictEqual(actual, expected)) expect.fail(`${label()}: ${inspect(actual, { depth: 6 })} is not ${inspect(expected, { depth: 6 })}`)
}

function expectSame(fn: () => unknown, label: () => string) {
  const { fast, slow } = bothWays(fn)
  expectEqual(fast, slow, () => `${label()}: fast path and schema disagree`)
}

function envelope(kind: string, payload: unknown, schemaVersion = 1): RecordEnvelope {
  return { namespace: RECOVERY_NAMESPACE, schemaVersion, kind, recordId: `${kind}-1`, payload }
}

const LOGS = fileURLToPath(new URL('../../../tests/fixtures/logs/v0.1.0/', import.meta.url))

function goldenLogs(): SessionEvent[][] {
  return readdirSync(LOGS).filter((name) => name.endsWith('.jsonl')).sort().map((name) =>
    readFileSync(LOGS + name, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as SessionEvent))
}

function isRecovery(event: SessionEvent): boolean {
  return event.type === 'extension/record' && (event.data as RecordEnvelope | undefined)?.namespace === RECOVERY_NAMESPACE
}

const hex = (length: number, digit = 'a') => digit.repeat(length)
const SHA256 = hex(64, 'c')
const FILES = [{ path: 'bin/run', hash: 'link:../tools/run' }, { path: 'dev/fifo', hash: 'special' }, { path: 'package.json', hash: hex(64, 'd') }]

/** Every kind, once with every optional field and once with none (as today's code writes them). */
const EXAMPLES: { [K in RecoveryKind]: RecoveryPayloads[K][] } = {
  attempt: [{
    attemptId: 'task-1-a2', taskId: 'task-1', nodeId: 'a', index: 2, rerunOf: 'task-1-a1',
    candidate: { digest: hex(64, 'b'), source: 'git', head: hex(40, 'e'), tree: hex(64, 'f') },
    parentCandidate: hex(40, '1'), configuredChecks: ['unit', 'lint.v2', 'pinned'],
    checks: [
      { checkId: 'unit', verdict: 'FAIL', exitCode: 1, durationMs: 120, signature: SHA256, outputExcerpt: 'expected 2 got 3\n' },
      { checkId: 'lint.v2', verdict: 'INCONCLUSIVE', signal: 'SIGKILL', durationMs: 0, reason: 'killed' },
      { checkId: 'pinned', verdict: 'INCONCLUSIVE', durationMs: 0, reason: 'pin_changed',
        pinChanges: [{ path: 'test/a.js', change: 'modified' }, { path: 'package.json', change: 'deleted' }] },
    ],
    steps: 3, agentClaim: 'blocked', agentRequests: [{ type: 'strategy', text: 'try a parser generator' }],
    strategy: 1, sandbox: 'bwrap', recordedAt: 1_796_060_725_564,
  }, {
    attemptId: 'task-1-a1', taskId: 'task-1', index: 1, candidate: { digest: hex(64, 'b'), source: 'workspace' },
    configuredChecks: [], checks: [], strategy: 0, recordedAt: 0,
  }],
  decision: [{
    decisionId: 'task-1-d1', taskId: 'task-1', attemptId: 'task-1-a2', verdict: 'FAIL',
    delta: { newPass: ['lint'], changedFailure: true, regression: ['unit'], candidateChanged: false, progress: false },
    action: 'STOP', stopReason: 'budget_exhausted:attempts', reason: 'BUDGET_ATTEMPTS',
    budgetsUsed: { attempts: 6, totalSteps: 9, verifyReruns: 1, strategyChanges: 0 },
    budgets: { maxAttempts: 6, maxTotalSteps: 300, maxVerifyReruns: 5, stagnationIdenticalRounds: 2, stagnationUnchangedRounds: 3, maxStrategyChanges: 0 },
    decidedAt: 1_796_060_725_600,
  }, {
    decisionId: 'task-1-d0', taskId: 'task-1', verdict: 'MISSING', action: 'RETRY', reason: 'MISSING_CHECKS',
    budgetsUsed: { attempts: 0, totalSteps: 0, verifyReruns: 0, strategyChanges: 0 }, decidedAt: 5,
  }],
  candidate: [
    { journalId: 'candidate-2', stage: 'rolled-back', digest: hex(64, 'b'), parent: hex(40, '2'), attemptId: 'task-1-a2', at: 7 },
    { journalId: 'candidate-1', stage: 'proposed', digest: hex(40, '3'), at: 6 },
  ],
  receipt: [
    { journalId: 'candidate-2', digest: hex(64, 'b'), previous: hex(64, '4'), at: 8 },
    { journalId: 'candidate-1', digest: hex(40, '3'), at: 6 },
  ],
  strategy: [
    { taskId: 'task-1', attemptId: 'task-1-a2', text: 'switch to a hand-written parser', proposedBy: 'agent', at: 9 },
    { taskId: 'task-1', text: '', proposedBy: 'manager', at: 0 },
  ],
  checks: [
    { taskId: 'task-1', checks: [{ id: 'unit', argv: ['npm', 'test'], timeoutMs: 600_000, pin: ['package.json', 'test/**'] }, { id: 'L_2', argv: ['make', 'lint'], timeoutMs: 1 }], setBy: 'user', at: 10 },
    { taskId: 'task-1', checks: [], setBy: 'user', at: 10 },
  ],
  pins: [
    { taskId: 'task-1', files: FILES, digest: pinnedSetDigest(FILES), reason: 'checks-set', acceptanceCycle: 2, at: 11 },
    { taskId: 'task-1', files: [], digest: pinnedSetDigest([]), reason: 'task-start', at: 11 },
  ],
  unverified: [
    { taskId: 'task-1', nodeId: 'b', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'The workspace kept changing.', lostRounds: 3, at: 12 },
    { taskId: 'task-1', code: 'X', reason: '', message: '', lostRounds: 0, at: 0 },
  ],
}

const long = (length: number) => 'a'.repeat(length)

/** Values around every type, bound, pattern and union of the recovery schemas. */
const REPLACEMENTS: unknown[] = [
  null, undefined, '', 'x', 'not an id!', 'a b', 'x\n', '.hidden', 'A_B', 'a_B', '_A', 'A-B', 'Ab', 'AB\n', 0, -0, 1, -1, 1.5, 2 ** 60, 1e300,
  3_600_000, 3_600_001, Number.NaN, Infinity, -Infinity, true, false, [], {}, [null], ['x'], [1], { path: 'a' },
  long(32), long(33), long(64), long(65), long(100), long(101), long(200), long(201), long(2000), long(2001),
  long(4000), long(4001), long(4096), long(4097), hex(40), hex(39), hex(41), hex(63), hex(64), hex(65), hex(64).toUpperCase(),
  `link:${long(4096)}`, `link:${long(4097)}`, 'link:a\nb', 'link:', 'special', 'specials',
  'PASS', 'FAIL', 'INCONCLUSIVE', 'MISSING', 'STOP', 'COMPLETE', 'done', 'retry', 'user', 'agent', 'workspace', 'git', 'copy',
  'bwrap', 'modified', 'added', 'timeout', 'pin_changed', 'rolled-back', 'committed', 'task-start', 'accepted',
]

/**
 * The payload with each value replaced by each of `REPLACEMENTS`, deleted (a hole, in an array), and
 * with an extra key (an unknown field, or an array's non-index key) and a `__proto__` key beside it.
 */
function mutations(payload: unknown): unknown[] {
  const out: unknown[] = []
  const edit = (path: (string | number)[], change: (parent: any, key: string | number) => void) => { out.push(editedCopy(payload, path, change)) }
  for (const path of paths(payload)) {
    edit(path, (parent, key) => { delete parent[key] })
    edit(path, (parent, key) => { parent[`${key}-extra`] = 1 })
    // As JSON.parse makes it: an own key, not the prototype.
    edit(path, (parent) => { Object.defineProperty(parent, '__proto__', { value: { x: 1 }, enumerable: true, writable: true, configurable: true }) })
    for (const replacement of REPLACEMENTS) edit(path, (parent, key) => { parent[key] = replacement })
  }
  return out
}

describe('recovery reader: the today fast path reads exactly what the schema reads', () => {
  const logs = goldenLogs()
  const golden = logs.flat().filter(isRecovery).map((event) => event.data as RecordEnvelope)
  const kinds = Object.keys(EXAMPLES) as RecoveryKind[]

  it('every kind has a today check, and the golden logs hold recovery records of five kinds', () => {
    expect(Object.keys(RECOVERY_TODAY).sort()).to.deep.equal([...recoveryReader.kinds].sort())
    expect([...kinds].sort()).to.deep.equal([...recoveryReader.kinds].sort())
    expect([...new Set(golden.map((record) => record.kind))].sort()).to.deep.equal(['attempt', 'candidate', 'decision', 'pins', 'receipt'])
  })

  it('every golden and example payload is in today\'s shape: the fast path takes it, the schema reads it unchanged', () => {
    const records = [...golden, ...kinds.flatMap((kind) => EXAMPLES[kind].map((payload) => envelope(kind, payload)))]
    for (const record of records) {
      expect(RECOVERY_TODAY[record.kind as RecoveryKind](record.payload), `${record.kind} ${JSON.stringify(record.payload)}`).to.equal(true)
      for (const schemaVersion of [1, 2]) {
        const { fast, slow } = bothWays(() => recoveryReader.read({ ...record, schemaVersion }, 3).payload)
        expectEqual(slow, { value: record.payload }, () => `${record.kind} v${schemaVersion} by the schema`)
        expectEqual(fast, slow, () => `${record.kind} v${schemaVersion}: fast path and schema disagree`)
        // A copy: the caller owns it, and the event's data is never shared.
        expect((fast as { value: unknown }).value).to.not.equal(record.payload)
      }
    }
  })

  it('every mutation of every kind, at version 1 or 2: same value or same refusal', function () {
    this.timeout(120_000)
    // One golden record of each kind it has (the others are the same shape), and every example.
    const seen = new Set<string>()
    const sources = [...golden.filter((record) => !seen.has(record.kind) && seen.add(record.kind)),
      ...kinds.flatMap((kind) => EXAMPLES[kind].map((payload) => envelope(kind, payload)))]
    const accepted = new Map<string, number>()
    const refused = new Map<string, number>()
    let compared = 0
    for (const source of sources) {
      const today = RECOVERY_TODAY[source.kind as RecoveryKind]
      for (const payload of mutations(source.payload)) {
        // Both versions take the same path (each kind's today shape starts at 1): alternate them.
        const schemaVersion = 1 + compared % 2
        expectSame(() => recoveryReader.read({ ...source, schemaVersion, payload }, 42),
          () => `${source.kind} v${schemaVersion} mutation: ${JSON.stringify(payload)}`)
        compared++
        const tally = today(payload) ? accepted : refused
        tally.set(source.kind, (tally.get(source.kind) ?? 0) + 1)
      }
    }
    // Both branches are exercised for every kind: mutations the fast path takes and ones left to the schema.
    for (const kind of kinds) {
      expect(accepted.get(kind) ?? 0, `${kind} accepted`).to.be.greaterThan(20)
      expect(refused.get(kind) ?? 0, `${kind} refused`).to.be.greaterThan(100)
    }
    expect(compared).to.be.greaterThan(15_000)
  })

  it('payloads no field mutation makes: not plain objects, too many files, a check without timeoutMs', () => {
    const [pins] = EXAMPLES.pins
    const file = (i: number) => ({ path: `f${String(i).padStart(5, '0')}`, hash: SHA256 })
    const files = (n: number) => Array.from({ length: n }, (_, i) => file(i))
    const [checks] = EXAMPLES.checks
    const untimed = { id: 'L_2', argv: ['make', 'lint'] }
    const odd: [RecoveryKind, unknown][] = [
      ['pins', { ...pins, files: files(MAX_PINNED_FILES) }],
      ['pins', { ...pins, files: files(MAX_PINNED_FILES + 1) }],
      ['checks', { ...checks, checks: [untimed] }],
      ['checks', { ...checks, checks: [{ ...untimed, timeoutMs: undefined }] }],
      ['receipt', Object.assign(Object.create(null), EXAMPLES.receipt[0])],
      ['receipt', Object.create(EXAMPLES.receipt[0])],
      ['receipt', Object.defineProperty({ ...EXAMPLES.receipt[1] }, 'digest', { value: hex(64), enumerable: false })],
      ['strategy', new (class Strategy { taskId = 't'; text = 'x'; proposedBy = 'user'; at = 1 })()],
      ['unverified', new Date(0)],
      ...kinds.flatMap((kind): [RecoveryKind, unknown][] => [[kind, null], [kind, []], [kind, 'x'], [kind, 0], [kind, {}]]),
    ]
    odd.forEach(([kind, payload], i) => {
      for (const schemaVersion of [1, 2]) {
        expectSame(() => recoveryReader.read(envelope(kind, payload, schemaVersion), 7), () => `${kind} v${schemaVersion} #${i}`)
      }
    })
    // The longest pin list the schema takes is still read by the fast path; one more is refused by both.
    expect(RECOVERY_TODAY.pins({ ...pins, files: files(MAX_PINNED_FILES) })).to.equal(true)
    expect(RECOVERY_TODAY.pins({ ...pins, files: files(MAX_PINNED_FILES + 1) })).to.equal(false)
    // The schema would fill in the default: the copy would not, so the fast path must leave it.
    expect(RECOVERY_TODAY.checks({ ...checks, checks: [untimed] })).to.equal(false)
  })

  it('records the reader refuses whatever the payload: other versions, kinds and namespaces', () => {
    const [attempt] = EXAMPLES.attempt
    for (const record of [envelope('attempt', attempt, 3), envelope('attempt', attempt, 0), envelope('constructor', attempt),
      envelope('other', attempt), { ...envelope('attempt', attempt), namespace: 'dsh-task-supervisor' }]) {
      const { fast } = bothWays(() => recoveryReader.read(record, 9))
      expect((fast as { error: { code: string } }).error.code).to.equal('RECORD_UNSUPPORTED')
      expectSame(() => recoveryReader.read(record, 9), () => JSON.stringify(record))
    }
  })

  it('the recovery fold of every golden log, with the fast path on and off', () => {
    for (const events of logs) {
      const { fast, slow } = bothWays(() => foldRecoveryLog(events))
      expect(isDeepStrictEqual(fast, slow), 'fold differs').to.equal(true)
      expect((fast as { value: { poisoned?: unknown } }).value.poisoned).to.equal(undefined)
    }
  })
})

/*
 * The readers' `today` fast paths (a non-throwing check of today's shape, schemastery only when it
 * says no) must read exactly what the schema-only reading reads: the same value, or the same refusal
 * (code, message, details with the seq). Compared over every record of the fixture logs, old-version
 * records (v1–v9), invalid records, and systematic mutations of every today-shaped payload; and the
 * supervisor fold over whole logs, with the fast path on and off.
 */
import { expect } from 'chai'
import { isDeepStrictEqual } from 'node:util'
import type { SessionEvent } from '../src/events'
import { isRecordEnvelope, RecordEnvelope } from '../src/envelope'
import { isEnvelopeShape } from '../src/records/shape'
import { bothWays, editedCopy, paths } from './fixtures/fast-path'
import { repairReader } from '../src/repair'
import {
  applyPlanReview, applySupervisorEvent, approve, clear, foldSupervisorEvents, initSupervisorState, isReviewJobV1, isTaskStateV11, newTask,
  pause, resume, reviewJobEnvelope, reviewJobReader, reworkNode, submitPlan, taskReader, TASK_NAMESPACE, type ReviewJob,
} from '../src/task'
import { DIAMOND, Driver, job } from './fixtures/task'


function expectSame(fn: () => unknown, label: string | (() => string)) {
  const { fast, slow } = bothWays(fn)
  if (!isDeepStrictEqual(fast, slow)) {
    expect(fast, `${typeof label === 'string' ? label : label()}: fast path and schema disagree`).to.deep.equal(slow)
  }
}

const READERS = { [TASK_NAMESPACE]: taskReader, [reviewJobReader.namespace]: reviewJobReader, [repairReader.namespace]: repairReader }

function readEither(envelope: RecordEnvelope, seq: number) {
  const reader = READERS[envelope.namespace as keyof typeof READERS]
  return reader.read(envelope, seq)
}

/** Logs that exercise every task phase, review job status and repair record the fixtures can make. */
function fixtureLogs(): SessionEvent[][] {
  const logs: SessionEvent[][] = []

  // A task through revise → approve → rework → pause/resume → completion, a repair, a decline, a new task.
  const a = new Driver()
  a.step((t, at) => newTask(t, { objective: 'parse lists' }, at), 'T1')
  const plan1 = job()
  a.step((t, at) => submitPlan(t, { plan: DIAMOND, jobId: plan1 }, at))
  a.log.record(reviewJobEnvelope(reviewJob(a, plan1, 'plan', 'requested'), `${plan1}:requested`))
  a.step((t, at) => applyPlanReview(t, { jobId: plan1, verdict: 'revise', findings: ['name the tests'] }, at))
  a.log.record(reviewJobEnvelope(reviewJob(a, plan1, 'plan', 'finished', { verdict: 'revise', findings: ['name the tests'] }), `${plan1}:finished`))
  const plan2 = job()
  a.step((t, at) => submitPlan(t, { plan: DIAMOND, jobId: plan2 }, at))
  a.step((t, at) => applyPlanReview(t, { jobId: plan2, verdict: 'pass', findings: [] }, at))
  a.log.record(reviewJobEnvelope(reviewJob(a, plan2, 'plan', 'failed'), `${plan2}:failed`))
  a.step((t, at) => approve(t, at))
  a.passNode('a')
  a.step((t, at) => reworkNode(t, { nodeId: 'a', reason: 'the tokenizer drops quotes' }, at))
  a.step((t, at) => pause(t, { reason: 'user' }, at))
  a.step((t, at) => resume(t, {}, at))
  a.complete()
  const p1 = a.propose('p1', ['b'])
  a.reopen(p1)
  a.complete()
  const p2 = a.propose('p2', ['c'], { reason: 'the right side is slow' })
  a.decline(p2)
  a.start('T2')
  a.step((t, at) => pause(t, { reason: 'recovery' }, at))
  a.step((t, at) => clear(t, at))
  logs.push(a.log.events)

  // A historical reopen: T1 completes, T2 completes, T1 is repaired from history.
  const b = new Driver()
  b.start('H1')
  const h1 = b.complete()
  b.start('H2')
  b.complete()
  const ph = b.propose('ph', ['a'], { task: h1 })
  b.reopen(ph, h1)
  logs.push(b.log.events)
  return logs
}

function reviewJob(driver: Driver, jobId: string, kind: ReviewJob['kind'], status: ReviewJob['status'], extra: Partial<ReviewJob> = {}): ReviewJob {
  const seq = driver.log.nextSeq
  return {
    jobId, taskId: driver.task!.id, taskRevision: driver.task!.revision, kind, model: 'scripted',
    reviewerSessionId: `rev-${jobId}`, evidenceSeqs: [Math.max(0, seq - 1)], cutoffSeq: Math.max(0, seq - 1), status, ...extra,
  }
}

const base = { id: 'old', objective: 'legacy work', enabled: true }
const linearPlan = { acceptanceCriteria: ['works'], nodes: [{ id: 'a', title: 'first' }, { id: 'b', title: 'second' }] }

/** Records of every older version, and records that no version can read. */
function olderAndInvalidEnvelopes(): RecordEnvelope[] {
  const state = (schemaVersion: number, payload: unknown, kind = 'state') =>
    ({ namespace: TASK_NAMESPACE, schemaVersion, kind, recordId: `r${schemaVersion}`, payload })
  const runsArray = [{ nodeId: 'a', attempt: 1, status: 'passed' }, { nodeId: 'b', attempt: 2, status: 'running' }]
  const runs = { a: { attempt: 1, status: 'passed' }, b: { attempt: 1, status: 'pending' } }
  return [
    state(1, { ...base, revision: 4, phase: 'active', plan: linearPlan, nodeRuns: runsArray }),
    state(1, { ...base, revision: 2, phase: 'paused', nodeRuns: [] }),
    state(2, { ...base, revision: 9, phase: 'complete', plan: linearPlan, nodeRuns: runsArray, completionReview: { jobId: 'c', verdict: 'pass', findings: [] } }),
    state(3, { ...base, revision: 3, phase: 'planning', nodeRuns: [], planFeedback: ['add tests'] }),
    state(4, { ...base, revision: 5, phase: 'reviewing', plan: { ...linearPlan, nodes: [{ id: 'a', title: 'x', dependsOn: [] }] }, nodeRuns: [], pendingReview: { kind: 'plan', jobId: 'p', forRevision: 5 } }),
    state(4, { ...base, revision: 2, phase: 'active', plan: linearPlan, nodeRuns: [{ nodeId: 'a', attempt: 1, status: 'pending' }, { nodeId: 'a', attempt: 1, status: 'pending' }] }),
    state(5, { ...base, revision: 5, phase: 'active', plan: linearPlan, nodeRuns: runs }),
    state(6, { ...base, revision: 6, phase: 'active', plan: linearPlan, nodeRuns: { ...runs, a: { attempt: 2, status: 'pending', evidenceAfterSeq: 40, reworkReason: 'bug', priorAcceptance: { attempt: 1 } } } }),
    state(7, { ...base, revision: 2, phase: 'paused', pauseReason: 'restart', resumePhase: 'planning', nodeRuns: {} }),
    state(7, { ...base, revision: 1, phase: 'paused', pauseReason: 'recovery', nodeRuns: {} }),
    state(8, { ...base, revision: 8, phase: 'complete', plan: linearPlan, nodeRuns: runs, completionReview: { jobId: 'c', verdict: 'pass', findings: [], evidenceSeqs: [5], cutoffSeq: 6 } }),
    state(9, { ...base, revision: 2, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', nodeRuns: {} }),
    state(9, { ...base, revision: 1, phase: 'planning', nodeRuns: {}, acceptanceCycle: 4 }),
    state(1, { ...base, revision: 1, phase: 'reviewing', nodeRuns: [] }),
    state(10, { ...base, revision: 3, phase: 'paused', pauseReason: 'recovery', resumePhase: 'active', nodeRuns: {} }),
    // `budget` is a schema-11 pause reason: a schema-10 record cannot hold it.
    state(10, { ...base, revision: 3, phase: 'paused', pauseReason: 'budget', resumePhase: 'active', nodeRuns: {} }),
    state(12, { ...base, revision: 1, phase: 'planning', nodeRuns: {} }),
    state(11, { ...base, revision: 1, phase: 'planning', nodeRuns: {} }, 'other'),
    state(11, { ...base, revision: 1, phase: 'planning', nodeRuns: {} }, 'constructor'),
    state(11, { ...base, revision: 0, phase: 'planning', nodeRuns: {} }),
    state(11, { ...base, revision: 1, phase: 'planning', nodeRuns: { __proto__x: { attempt: 1, status: 'pending' } } }),
    state(11, { ...base, revision: 1, phase: 'planning', nodeRuns: {}, pauseReason: null, plan: null }),
    state(11, null),
    state(11, 'a string'),
    state(11, []),
  ]
}

const REPLACEMENTS: unknown[] = [
  null, undefined, '', 'not a node id!', 0, -1, 1.5, 2 ** 60, Number.NaN, true, [], {}, [null],
  'reviewing', 'awaiting-user', 'recovery', 'progress', 'pass',
]

/** The payload with the value at `path` replaced (or deleted), and with an extra key at that level. */
function mutations(payload: unknown): unknown[] {
  const out: unknown[] = []
  const edit = (path: (string | number)[], change: (parent: any, key: string | number) => void) => { out.push(editedCopy(payload, path, change)) }
  const done = new Set<string>()
  for (const path of paths(payload)) {
    // One place per field template (the first run, the first node…): the others are the same check.
    if (done.has(template(path))) continue
    done.add(template(path))
    edit(path, (parent, key) => { delete parent[key] })
    edit(path, (parent, key) => { parent[`${key}-extra`] = 1 })
    for (const replacement of REPLACEMENTS) edit(path, (parent, key) => { parent[key] = replacement })
  }
  // Keys a dict or the root may hold: node ids that are not, and optional fields a version may lack.
  for (const key of ['__proto__x', 'bad key', 'acceptanceCycle', 'completedAt', 'pauseReason', 'resumePhase', 'repairHistory', 'planFeedback']) {
    edit([key], (parent) => { parent[key] = 1 })
    if (payload && typeof payload === 'object' && 'nodeRuns' in payload) {
      edit(['nodeRuns', key], (parent) => { parent[key] = { attempt: 1, status: 'pending' } })
    }
  }
  return out
}

/** A field's place regardless of array index or node id: `nodeRuns.*.review.findings.*`. */
function template(path: (string | number)[]): string {
  return path.map((key, i) => typeof key === 'number' || /Runs$/.test(String(path[i - 1])) ? '*' : key).join('.')
}

/** Few records whose payloads together hold every field template the fixtures have (greedy cover). */
function covering(events: SessionEvent[]): SessionEvent[] {
  const seen = new Set<string>()
  const chosen: SessionEvent[] = []
  const templates = (event: SessionEvent) => new Set(paths((event.data as RecordEnvelope).payload).map(template))
  const candidates = events.map((event) => ({ event, templates: templates(event) }))
  for (;;) {
    let best: typeof candidates[number] | undefined
    let gain = 0
    for (const candidate of candidates) {
      const fresh = [...candidate.templates].filter((t) => !seen.has(t)).length
      if (fresh > gain) [best, gain] = [candidate, fresh]
    }
    if (!best) return chosen
    chosen.push(best.event)
    for (const t of best.templates) seen.add(t)
  }
}

describe('record readers: the today fast path reads exactly what the schema reads', () => {
  const logs = fixtureLogs()
  const records = logs.flat().filter((event) => event.type === 'extension/record')

  it('the fixture logs hold every kind of supervisor record, all in today\'s shape', () => {
    const kinds = new Set(records.map((event) => `${(event.data as RecordEnvelope).namespace}/${(event.data as RecordEnvelope).kind}`))
    expect([...kinds].sort()).to.deep.equal([
      'dsh-task-supervisor-repair/confirm', 'dsh-task-supervisor-repair/decline', 'dsh-task-supervisor-repair/proposal',
      'dsh-task-supervisor-review/job', 'dsh-task-supervisor/state',
    ])
    const states = records.filter((event) => (event.data as RecordEnvelope).namespace === TASK_NAMESPACE)
    expect(states.every((event) => isTaskStateV11((event.data as RecordEnvelope).payload))).to.equal(true)
    const phases = new Set(states.map((event) => ((event.data as RecordEnvelope).payload as { phase: string }).phase))
    expect([...phases].sort()).to.deep.equal(['active', 'awaiting-approval', 'cleared', 'complete', 'paused', 'planning', 'reviewing'])
  })

  it('every fixture record', () => {
    for (const event of records) expectSame(() => readEither(event.data as RecordEnvelope, event.seq), `seq ${event.seq}`)
  })

  it('a review job is read canonical: a fresh copy without unknown fields, on both paths', () => {
    const event = records.find((e) => (e.data as RecordEnvelope).namespace === reviewJobReader.namespace)!
    const envelope = event.data as RecordEnvelope
    const payload = { ...(envelope.payload as object), smuggled: 'x' }
    const { fast, slow } = bothWays(() => reviewJobReader.read({ ...envelope, payload }, event.seq).payload)
    for (const read of [fast, slow] as any[]) {
      expect(read.value).to.not.have.property('smuggled')
      expect(read.value).to.not.equal(payload)
    }
  })

  it('records of versions 1–10 and invalid records: same value or same RECORD_UNSUPPORTED refusal with its seq', () => {
    let refusals = 0
    olderAndInvalidEnvelopes().forEach((envelope, i) => {
      const seq = 100 + i
      const { fast } = bothWays(() => taskReader.read(envelope, seq))
      if ('error' in fast) {
        refusals++
        expect(fast.error.code).to.equal('RECORD_UNSUPPORTED')
      }
      expectSame(() => taskReader.read(envelope, seq), `v${envelope.schemaVersion} #${i}`)
    })
    expect(refusals).to.be.greaterThan(5)
  })

  it('every mutation of every today-shaped task and review job payload', function () {
    this.timeout(120_000)
    let compared = 0
    let accepted = 0
    for (const event of covering(records.filter((e) => (e.data as RecordEnvelope).namespace !== repairReader.namespace))) {
      const envelope = event.data as RecordEnvelope
      const today = envelope.namespace === TASK_NAMESPACE ? isTaskStateV11 : isReviewJobV1
      for (const payload of mutations(envelope.payload)) {
        expectSame(() => readEither({ ...envelope, payload }, event.seq), () => `mutation of seq ${event.seq}: ${JSON.stringify(payload)}`)
        compared++
        if (today(payload)) accepted++
      }
    }
    // Both branches are exercised: mutations the fast path takes and mutations left to the schema.
    expect(compared).to.be.greaterThan(1_000)
    expect(accepted).to.be.greaterThan(100)
    expect(compared - accepted).to.be.greaterThan(100)
  })

  it('the envelope check accepts only what RecordEnvelope accepts', () => {
    const envelope = records[0].data as RecordEnvelope
    const candidates = [envelope, ...mutations({ ...envelope, payload: 1 }), { ...envelope, namespace: 'Upper' }, { ...envelope, payload: 0 }, null, 'x']
    // Against the schema itself: isRecordEnvelope asks isEnvelopeShape first, so it cannot be the judge.
    const schemaAccepts = (value: unknown) => {
      try {
        RecordEnvelope(value as RecordEnvelope)
        return true
      } catch {
        return false
      }
    }
    let accepted = 0
    for (const candidate of candidates) {
      if (!isEnvelopeShape(candidate)) continue
      accepted++
      expect(schemaAccepts(candidate), JSON.stringify(candidate)).to.equal(true)
      expect(isRecordEnvelope(candidate)).to.equal(true)
    }
    expect(accepted).to.be.greaterThan(1)
  })

  it('the supervisor fold of every fixture log, whole and event by event, valid and poisoned', () => {
    const invalid = olderAndInvalidEnvelopes()
    const unreadable = [
      invalid.find((e) => e.schemaVersion === 11), invalid.find((e) => e.kind === 'constructor'),
      invalid.find((e) => (e.payload as { revision?: number } | null)?.revision === 0), { namespace: TASK_NAMESPACE, schemaVersion: 'ten' },
    ]
    const variants: SessionEvent[][] = []
    for (const log of logs) {
      variants.push(log)
      // The same log with one unreadable or malformed record at several places.
      for (const at of [1, Math.floor(log.length / 2), log.length - 1]) {
        for (const data of unreadable) {
          const events = [...log.slice(0, at), { seq: at, type: 'extension/record', time: 0, data }, ...log.slice(at)]
          variants.push(events.map((event, seq) => ({ ...event, seq })))
        }
      }
    }
    let poisoned = 0
    for (const events of variants) {
      const { fast, slow } = bothWays(() => foldSupervisorEvents(events))
      expect(isDeepStrictEqual(fast, slow), 'fold differs').to.equal(true)
      const stepwise = events.reduce(applySupervisorEvent, initSupervisorState())
      expect(isDeepStrictEqual({ value: stepwise }, fast), 'event-by-event fold differs').to.equal(true)
      if ((fast as { value: { poisoned?: unknown } }).value.poisoned) poisoned++
    }
    expect(poisoned).to.be.greaterThan(5)
  })
})

import { expect } from 'chai'
import { CLOCK_SLACK_MS, carriedTool, lognormalOf, mulberry32, pacedDurability, paceSampler, splitByChecks, stepGaps, type StepRecord } from '../benchmarks/scale-pace'
import { quantile } from '../benchmarks/scale-harness'
import { medianRun } from '../benchmarks/scale-paced-section'
import type { PacedResult } from '../benchmarks/scale-paced'

describe('scale benchmark: the paced endpoint\'s latency', () => {
  it('draws the same latencies from one seed and others from another (runs compare)', () => {
    const draw = (seed: number) => {
      const next = paceSampler({ seed, medianMs: 2000, p99Ms: 20_000 })
      return Array.from({ length: 50 }, () => next())
    }
    expect(draw(7)).to.deep.equal(draw(7))
    expect(draw(8)).to.not.deep.equal(draw(7))
    // Pinned: a change to the generator would silently make new runs incomparable with old ones.
    expect(mulberry32(0)()).to.be.closeTo(0.26642920868471265, 1e-12)
  })

  it('is heavy-tailed as asked: median 2 s, p99 ~20 s, every draw positive', () => {
    const next = paceSampler({ seed: 1, medianMs: 2000, p99Ms: 20_000 })
    const draws = Array.from({ length: 200_000 }, () => next())
    expect(draws.every((draw) => draw > 0)).to.equal(true)
    expect(quantile(draws, 0.5)).to.be.within(1940, 2060)
    expect(quantile(draws, 0.99)).to.be.within(19_000, 21_000)
    // The mean of a lognormal lies above its median: exp(sigma² / 2) × 2 s ≈ 3.3 s here.
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length
    expect(mean).to.be.within(3100, 3500)
  })

  it('refuses a p99 that is not above the median (no lognormal has it)', () => {
    expect(() => lognormalOf({ medianMs: 2000, p99Ms: 2000 })).to.throw(RangeError, /median < p99/)
    expect(() => lognormalOf({ medianMs: 0, p99Ms: 10 })).to.throw(RangeError)
    expect(lognormalOf({ medianMs: 2000, p99Ms: 20_000 }).sigma).to.be.closeTo(Math.log(10) / 2.3263478740408408, 1e-12)
  })
})

describe('scale benchmark: the paced hosts\' store durability', () => {
  it('is fsync unless os is asked for, and refuses anything else (a typo would measure fsync under another name)', () => {
    expect(pacedDurability(undefined)).to.equal('fsync')
    expect(pacedDurability('os')).to.equal('os')
    expect(() => pacedDurability('none')).to.throw(/SCALE_PACE_DURABILITY takes fsync \(the default\) or os, not "none"/)
  })
})

describe('scale benchmark: host-added latency per step', () => {
  const main = (at: number, end: number | undefined, extra: Partial<StepRecord> = {}): StepRecord => ({ key: 'ws\u0000main', task: 'ws', receivedAt: at, endedAt: end, ...extra })
  const reviewer = (at: number, end: number | undefined, extra: Partial<StepRecord> = {}): StepRecord => ({ key: 'ws\u0000reviewer', task: 'ws', receivedAt: at, endedAt: end, ...extra })

  it('measures an in-turn step from its own session\'s answer, even while another session of the task answers in between', () => {
    const gaps = stepGaps([
      main(0, 2000, { answered: 'write' }),
      // The reviewer's answer ends after the main one, before the main session's next step arrives.
      reviewer(100, 2010, { answered: 'review_verdict' }),
      main(2012, 4000, { tool: 'write', answered: 'task_report_stage' }),
    ])
    expect(gaps.inTurn).to.deep.equal([{ gap: 12, tool: 'write' }])
    expect(gaps.hostAdded).to.deep.include({ gap: 12, after: 'write', next: 'in turn' })
  })

  it('measures a turn\'s first request from the latest answer of its task (a review starting after the agent\'s report)', () => {
    const gaps = stepGaps([
      main(0, 1000, { answered: 'task_report_stage' }),
      // The agent's next turn and the stage review both start from the report's end.
      main(1010, 3000, { answered: 'text' }),
      reviewer(1015, 2500, { answered: 'review_read_log' }),
      reviewer(2507, 2600, { tool: 'review_read_log', answered: 'review_verdict' }),
      // The agent resumes after the verdict: 40 ms after the reviewer's answer, not its own.
      main(3040, 3100, { answered: 'task_start_node' }),
    ])
    expect(gaps.hostAdded).to.deep.equal([
      { gap: 10, after: 'task_report_stage', next: 'main turn start' },
      { gap: 15, after: 'task_report_stage', next: 'reviewer turn start' },
      { gap: 7, after: 'review_read_log', next: 'in turn' },
      { gap: 40, after: 'text', next: 'main turn start' },
    ])
    // The narrower figures: the same session's previous answer only.
    expect(gaps.inTurn).to.deep.equal([{ gap: 7, tool: 'review_read_log' }])
    expect(gaps.sameSession).to.deep.equal([10, 7, 40])
  })

  it('measures a turn a person\'s command started from the command, and the host\'s part before the command apart', () => {
    const gaps = stepGaps([
      reviewer(0, 1000, { answered: 'review_verdict' }),
      // The host shows the task awaiting approval 30 ms after the plan review's verdict ended (the verdict
      // applied); the harness approves 15 ms later; the agent's turn starts 30 ms after the approval.
      main(1075, 7000, { answered: 'task_start_node' }),
      main(7004, 8000, { tool: 'task_start_node', answered: 'write' }),
      // A later turn start with no command after the last answer: measured from that answer, as before.
      reviewer(8020, 9000, { answered: 'review_read_log' }),
    ], [{ task: 'ws', at: 1045, shownAt: 1030, what: '/task approve' }, { task: 'other', at: 8010, what: '/task approve' }])
    expect(gaps.hostAdded).to.deep.equal([
      { gap: 30, after: '/task approve', next: 'main turn start' },
      { gap: 4, after: 'task_start_node', next: 'in turn' },
      { gap: 20, after: 'write', next: 'reviewer turn start' },
      // Nothing is dropped: the verdict's end to the task shown awaiting approval is the host's; the
      // harness's own noticing (15 ms) is not (a task with no answers yet adds nothing).
      { gap: 30, after: 'review_verdict', next: 'awaiting /task approve' },
    ])
    expect(gaps.awaiting).to.equal(1)
  })

  it('charges a person\'s time between two commands to nobody: the second one\'s wait starts after the first', () => {
    const gaps = stepGaps([
      reviewer(0, 1000, { answered: 'review_verdict' }),
      main(5040, 6000, { answered: 'text' }),
    ], [{ task: 'ws', at: 1050, shownAt: 1040, what: '/task approve' }, { task: 'ws', at: 5000, what: '/task resume' }])
    expect(gaps.hostAdded).to.deep.equal([
      { gap: 40, after: '/task resume', next: 'main turn start' },
      { gap: 40, after: 'review_verdict', next: 'awaiting /task approve' },
    ])
    expect(gaps.awaiting).to.equal(1)
  })

  // The endpoint notes an answer's end after writing its last bytes, on its own process's clock; the host
  // may have read them and shown the task waiting (on the harness's clock) a few milliseconds earlier.
  it('takes the answer the endpoint noted ending just after the task was shown waiting as what the host showed, at 0 ms', () => {
    const gaps = stepGaps([
      main(0, 1000, { answered: 'text' }),
      // A plan review of 15.5 s; its verdict is noted ending 3 ms after the host showed it applied.
      reviewer(1010, 16_500, { answered: 'review_verdict' }),
      main(16_540, 17_000, { answered: 'task_start_node' }),
    ], [{ task: 'ws', at: 16_510, shownAt: 16_497, what: '/task approve' }])
    expect(gaps.hostAdded).to.deep.equal([
      { gap: 10, after: 'text', next: 'reviewer turn start' },
      { gap: 30, after: '/task approve', next: 'main turn start' },
      // Not 15 497 ms from the agent's text before the review: the whole review turn is not the host's.
      { gap: 0, after: 'review_verdict', next: 'awaiting /task approve' },
    ])
    expect(gaps.awaiting).to.equal(1)
  })

  it('does not take an answer that ended later than the clocks\' slack after the task was shown waiting', () => {
    const command = { task: 'ws', at: 1045, shownAt: 1030, what: '/task approve' }
    // The agent's own request, still under way when the task was shown waiting, ends after it.
    const awaiting = (late: number) => stepGaps([
      reviewer(0, 1000, { answered: 'review_verdict' }),
      main(500, 1030 + late, { answered: 'text' }),
    ], [command]).hostAdded
    expect(awaiting(5000)).to.deep.equal([{ gap: 30, after: 'review_verdict', next: 'awaiting /task approve' }])
    expect(awaiting(CLOCK_SLACK_MS + 1)).to.deep.equal([{ gap: 30, after: 'review_verdict', next: 'awaiting /task approve' }])
    // Within the slack, the answer whose end is nearest to the moment shown: the verdict 30 ms before it
    // rather than an answer 50 ms after; an answer 10 ms after rather than the verdict.
    expect(awaiting(CLOCK_SLACK_MS)).to.deep.equal([{ gap: 30, after: 'review_verdict', next: 'awaiting /task approve' }])
    expect(awaiting(10)).to.deep.equal([{ gap: 0, after: 'text', next: 'awaiting /task approve' }])
  })

  it('does not take an answer to a request that came after the task was shown waiting (it cannot be what the host showed)', () => {
    const gaps = stepGaps([
      reviewer(0, 1000, { answered: 'review_verdict' }),
      // A request of the task arriving 5 ms after the task was shown waiting, answered 15 ms later (unpaced).
      main(1035, 1050, { answered: 'text' }),
    ], [{ task: 'ws', at: 1060, shownAt: 1030, what: '/task approve' }])
    expect(gaps.hostAdded.filter((gap) => gap.next.startsWith('awaiting'))).to.deep.equal([{ gap: 30, after: 'review_verdict', next: 'awaiting /task approve' }])
  })

  it('still charges an answer before the task\'s previous command to that command only, when it ended just after its task was shown waiting', () => {
    const gaps = stepGaps([
      main(0, 500, { answered: 'text' }),
      reviewer(510, 1043, { answered: 'review_verdict' }),
      main(5040, 6000, { answered: 'text' }),
    ], [{ task: 'ws', at: 1050, shownAt: 1040, what: '/task approve' }, { task: 'ws', at: 5000, what: '/task resume' }])
    expect(gaps.hostAdded).to.deep.equal([
      { gap: 10, after: 'text', next: 'reviewer turn start' },
      { gap: 40, after: '/task resume', next: 'main turn start' },
      // The verdict is the approval's (3 ms late on the host's clock), not the resume's as well.
      { gap: 0, after: 'review_verdict', next: 'awaiting /task approve' },
    ])
    expect(gaps.awaiting).to.equal(1)
  })

  it('does not take an answer to a request the command itself led to, even one ending within the slack', () => {
    const gaps = stepGaps([
      reviewer(0, 1000, { answered: 'review_verdict' }),
      // An unpaced endpoint: the turn the approval started is answered 30 ms after the task was shown waiting.
      main(1040, 1060, { answered: 'task_start_node' }),
    ], [{ task: 'ws', at: 1035, shownAt: 1030, what: '/task approve' }])
    expect(gaps.hostAdded).to.deep.equal([
      { gap: 5, after: '/task approve', next: 'main turn start' },
      { gap: 30, after: 'review_verdict', next: 'awaiting /task approve' },
    ])
  })

  it('opens no gap for a task\'s first request, nor for a request its session sent before the previous answer ended', () => {
    const gaps = stepGaps([
      main(0, undefined),
      main(50, 900, { tool: 'write' }),
      { key: 'other\u0000main', task: 'other', receivedAt: 60, endedAt: 100 },
    ])
    expect(gaps).to.deep.equal({ sameSession: [], inTurn: [], hostAdded: [], awaiting: 0 })
  })

  it('tells the loops of the bare loop apart by their key, not by their identical bodies', () => {
    const loop = (n: number, at: number, end: number, tool?: string): StepRecord => ({ key: `bare ${n}\u0000main`, task: `bare ${n}`, receivedAt: at, endedAt: end, tool, answered: 'write' })
    const gaps = stepGaps([loop(0, 0, 100), loop(1, 0, 200), loop(0, 101, 300, 'write'), loop(1, 203, 400, 'write')])
    expect(gaps.hostAdded.map(({ gap }) => gap)).to.deep.equal([1, 3])
  })

  it('names the tool a request carries the result of, and none for a turn\'s first request', () => {
    const call = { role: 'assistant', tool_calls: [{ id: 'c1', function: { name: 'write' } }] }
    expect(carriedTool([{ role: 'system' }, call, { role: 'tool', tool_call_id: 'c1' }])).to.equal('write')
    expect(carriedTool([{ role: 'system' }, call, { role: 'tool', tool_call_id: 'gone' }])).to.equal('?')
    expect(carriedTool([{ role: 'system' }, { role: 'user', content: 'go' }])).to.equal(undefined)
  })

  it('sets the gaps after the completion gate\'s checks apart, with their share of the host-added time', () => {
    const split = splitByChecks([{ gap: 10, after: 'write' }, { gap: 60, after: 'task_request_completion' }, { gap: 30, after: 'text' }], ['task_request_completion'])
    expect(split.host).to.deep.equal([10, 30])
    expect(split.checks).to.deep.equal([60])
    expect(split.checksShare).to.equal(0.6)
    expect(splitByChecks([], ['task_request_completion']).checksShare).to.equal(0)
  })
})

describe('scale benchmark: the paced section\'s repeated runs', () => {
  const run = (p99: number, busy: number, extra: Partial<PacedResult> = {}) => ({ p99, steps: 100, errors: 0, aborted: 0, cpu: { loopBusyMs: busy * 100, processMs: 0 }, ...extra }) as unknown as PacedResult

  it('reports the run of median p99, and every run\'s p99 and busy time in run order', () => {
    const runs = [run(375, 6.3), run(67, 4.9), run(154, 6.1)]
    const { median, spread } = medianRun(runs)
    expect(median).to.equal(runs[2])
    expect(spread).to.equal('375.0 ms (6.3 ms busy/step), 67.0 ms (4.9 ms busy/step), 154.0 ms (6.1 ms busy/step)')
  })

  it('takes the upper middle of an even count (the less kind of the two)', () => {
    const runs = [run(90, 5), run(30, 5), run(60, 5), run(120, 5)]
    expect(medianRun(runs).median).to.equal(runs[0])
    expect(medianRun([runs[0]]).median).to.equal(runs[0])
  })

  it('ranks a void run (no gap measured, a task failed, a request aborted) after every sound one', () => {
    // A p99 of NaN compared "equal" to everything and let the kinder run be picked.
    expect(medianRun([run(NaN, 5, { errors: 4 }), run(100, 5), run(50, 5)]).median.p99).to.equal(100)
    expect(medianRun([run(30, 5, { errors: 3 }), run(100, 5), run(120, 5)]).median.p99).to.equal(120)
    expect(medianRun([run(30, 5, { aborted: 1 }), run(100, 5), run(120, 5)]).median.p99).to.equal(120)
    // Half or more void: a void one is judged (and its goal fails, as it should).
    expect(medianRun([run(30, 5, { errors: 1 }), run(20, 5, { errors: 1 }), run(100, 5)]).median.errors).to.equal(1)
  })

  it('says so for a run that measured no step instead of printing NaN', () => {
    const { spread } = medianRun([run(NaN, 5, { steps: 0 }), run(10, 5), run(12, 5, { errors: 1 })])
    expect(spread).to.equal('no step measured, 10.0 ms (5.0 ms busy/step), 12.0 ms (5.0 ms busy/step), void')
  })
})

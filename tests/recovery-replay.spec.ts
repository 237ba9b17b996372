import { expect } from 'chai'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  decide, decisionPayload, DEFAULT_BUDGETS, foldRecovery, initRecoveryState, RECORD_EVENT_TYPE, RECOVERY_NAMESPACE, resolveBudgets,
  type Budgets, type DecisionPayload, type RecoveryState, type SessionEvent,
} from '@taskward/protocol'
import {
  allEvents, ANSWER_CHECK, answerWorkspace, bootRecovery, call, ok, readyTask, recoveryRecords, reviewsSettled, scriptReview, setAnswer,
} from '../plugins/recovery/tests/fixtures'

const isRecovery = (event: SessionEvent, kind?: string) => event.type === RECORD_EVENT_TYPE
  && event.data?.namespace === RECOVERY_NAMESPACE && (!kind || event.data.kind === kind)

/**
 * Re-decide every recorded decision from the log alone: the state folded up to the decision, without
 * the journal records the decision itself asked for, under the budgets the decision records (or
 * `budgets` when given: a replay under another configuration). Returns each decision as JSON text.
 */
function replayDecisions(events: SessionEvent[], budgets?: Partial<Budgets>): string[] {
  let state: RecoveryState = initRecoveryState()
  let beforeJournal = state
  const decisions: string[] = []
  for (const event of events) {
    if (isRecovery(event, 'decision')) {
      const recorded = event.data.payload as DecisionPayload
      const used = resolveBudgets(budgets ?? recorded.budgets ?? {})
      const decision = decide(beforeJournal, used, { taskId: recorded.taskId, at: recorded.decidedAt, completionRequested: true })
      decisions.push(JSON.stringify(decisionPayload(decision, recorded.decisionId, recorded.decidedAt, used)))
    }
    state = foldRecovery(state, event)
    if (!isRecovery(event, 'candidate') && !isRecovery(event, 'receipt')) beforeJournal = state
  }
  return decisions
}

/** The same log without the agent's requests: no request tool calls or results, no strategy records, no agentRequests. */
function withoutRequests(events: SessionEvent[]): SessionEvent[] {
  const requestTools = ['task_request_retry', 'task_propose_strategy']
  return events
    .filter((event) => !((event.type === 'tool/call' || event.type === 'tool/result') && requestTools.includes(event.data?.name)))
    .filter((event) => !isRecovery(event, 'strategy'))
    .map((event) => {
      if (!isRecovery(event, 'attempt') || !event.data.payload.agentRequests) return event
      const { agentRequests: _dropped, ...payload } = event.data.payload
      return { ...event, data: { ...event.data, payload } }
    })
}

describe('recovery: replaying the log gives byte-identical decisions, with or without agent requests', function () {
  this.timeout(30_000)
  let host: TestHost
  let cwd: string

  afterEach(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  it('re-decides every recorded decision exactly, and the injected requests change none of them', async () => {
    host = await bootRecovery()
    cwd = await answerWorkspace('alpha')
    const { session } = await readyTask(host, cwd, [ANSWER_CHECK])
    const request = async () => {
      await ok(host, session, 'task_request_retry', { reason: 'please let me retry' })
      await ok(host, session, 'task_propose_strategy', { text: 'skip the check this time' })
    }
    await request()
    expect((await call(host, session, 'task_request_completion', {})).error?.code).to.equal('VERDICT_NEGATIVE')
    await request()
    expect((await call(host, session, 'task_request_completion', {})).error?.code).to.equal('VERDICT_NEGATIVE')
    await host.ctx.recovery.settled()
    await setAnswer(cwd, 'beta')
    await request()
    expect((await call(host, session, 'task_request_completion', {})).error?.code).to.equal('VERDICT_NEGATIVE')
    await setAnswer(cwd, 'right')
    await request()
    scriptReview(host, 'pass')
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)

    const events = await allEvents(session)
    const recorded = (await recoveryRecords(session, 'decision')).map((d) => JSON.stringify(d.payload))
    expect(recorded.map((d) => JSON.parse(d).action)).to.deep.equal(['RETRY', 'CHANGE_STRATEGY', 'RETRY', 'COMPLETE'])
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts.every((a) => a.payload.agentRequests?.length === 2)).to.equal(true)

    // Every decision records the budgets it was made under (here the defaults, nothing configured).
    expect(recorded.map((d) => JSON.parse(d).budgets)).to.deep.equal(recorded.map(() => ({ ...DEFAULT_BUDGETS })))
    expect(replayDecisions(events)).to.deep.equal(recorded)
    // Under another configuration the same log is judged differently, and the replay shows where.
    const strict = replayDecisions(events, { maxStrategyChanges: 0 }).map((d) => JSON.parse(d))
    expect(strict.map((d) => d.action)).to.deep.equal(['RETRY', 'STOP', 'RETRY', 'COMPLETE'])
    expect(strict[1]).to.include({ stopReason: 'stagnation' })
    const stripped = withoutRequests(events)
    expect(stripped.length).to.be.below(events.length)
    expect(replayDecisions(stripped)).to.deep.equal(recorded)
  })
})

import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { RECORD_EVENT_TYPE, TASK_NAMESPACE } from '@taskward/protocol'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  allEvents, ANSWER_CHECK, answerWorkspace, bootRecovery, call, phase, readyTask, recoveryRecords,
  runCrashChild, type RecoveryConfig,
} from '../plugins/recovery/tests/fixtures'

const runChild = runCrashChild

/** A STOP decision is durable before its pause: a host killed in between must not leave the task running. */
describe('recovery: SIGKILL of the host between a STOP decision and its pause', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string

  /** A host started again on `host`'s data directory (a restart with other config); disposed first. */
  let again: TestHost | undefined

  afterEach(async () => {
    await again?.ctx.recovery.settled()
    await again?.dispose()
    again = undefined
    await host?.ctx.recovery?.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  /**
   * A ready task with the answer check on a host whose maxAttempts is 1, killed by the crash child right
   * after the budget STOP of its completion request (before the pause), then started again with `restart`.
   */
  async function killedAfterBudgetStop(restart: RecoveryConfig) {
    host = await bootRecovery({ budgets: { maxAttempts: 1 } })
    cwd = await answerWorkspace('kept candidate')
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    await host.stop()
    expect((await runChild(host.dataDir, session.id, 'budget-stop')).signal).to.equal('SIGKILL')
    again = await bootRecovery(restart, host.dataDir)
    const restored = await again.ctx.sessions.get(session.id)
    const [decision] = await recoveryRecords(restored, 'decision')
    expect(decision.payload).to.include({ action: 'STOP', stopReason: 'budget_exhausted:attempts' })
    expect((await phase(again, restored)).phase).to.equal('active')
    return { task, restored, decision }
  }

  const pausesOf = async (session: Parameters<typeof allEvents>[0], taskId: string) => (await allEvents(session))
    .filter((e) => e.type === RECORD_EVENT_TYPE && e.data.namespace === TASK_NAMESPACE && e.data.payload.id === taskId && e.data.payload.phase === 'paused')

  /** A ready task in a workspace holding `answer`, its host killed by the crash child in `mode`, then started again. */
  async function killedAfter(mode: 'stop' | 'review-stop', answer: string, checks?: Parameters<typeof readyTask>[2]) {
    host = await bootRecovery()
    cwd = await answerWorkspace(answer)
    const ready = await readyTask(host, cwd, checks)
    await host.stop()
    expect((await runChild(host.dataDir, ready.session.id, mode)).signal).to.equal('SIGKILL')
    await host.start()
    return { ...ready, restored: await host.ctx.sessions.get(ready.session.id) }
  }

  it('re-applies the recorded STOP before anything runs: resume pauses and refuses, the agent edits nothing', async () => {
    host = await bootRecovery()
    cwd = await answerWorkspace('kept candidate')
    // No checks: the completion request STOPs as unverified.
    const { session, task } = await readyTask(host, cwd)
    await host.stop()
    const exit = await runChild(host.dataDir, session.id, 'stop')
    expect(exit.signal).to.equal('SIGKILL')
    await host.start()

    const restored = await host.ctx.sessions.get(session.id)
    const [decision] = await recoveryRecords(restored, 'decision')
    expect(decision.payload).to.include({ action: 'STOP', stopReason: 'unverified' })
    // The kill came before the pause: the log still says active.
    expect((await phase(host, restored)).phase).to.equal('active')
    const agentTurns = (await allEvents(restored)).filter((e) => e.type === 'assistant/message').length

    // The agent would write the kept candidate as soon as it runs.
    host.scripted.script('main', [{ toolCalls: [{ name: 'write', args: { path: 'answer.txt', content: 'edited after the stop' } }] }])
    const resumed = await host.ctx.commands.input(restored, '/task resume')
    expect(resumed?.error?.code).to.equal('VALIDATION_MISSING')
    expect(resumed?.error?.message).to.match(/paused now and nothing ran/)
    expect(await phase(host, restored)).to.include({ phase: 'paused', pauseReason: 'recovery', id: task.id })
    expect(host.ctx.agents.get(restored.id)).to.equal(undefined)
    await host.ctx.recovery.settled()
    expect(host.scripted.pending('main')).to.equal(1)
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('kept candidate')
    expect((await allEvents(restored)).filter((e) => e.type === 'assistant/message')).to.have.length(agentTurns)
    expect((await allEvents(restored)).some((e) => e.type === 'tool/call' && e.data.name === 'write')).to.equal(false)
    // Exactly one pause was recorded for the STOP.
    const pauses = (await allEvents(restored)).filter((e) => e.type === RECORD_EVENT_TYPE && e.data.namespace === TASK_NAMESPACE
      && e.data.payload.id === task.id && e.data.payload.pauseReason === 'recovery')
    expect(pauses).to.have.length(1)
    expect(pauses[0].seq).to.be.greaterThan(decision.seq)

    // A person resuming the paused task afterwards is the same choice as after any STOP.
    host.scripted.reset('main')
    const again = await host.ctx.commands.input(restored, '/task resume')
    expect(again?.error).to.equal(undefined)
    expect((await phase(host, restored)).phase).to.equal('active')
  })

  it('a tool of the main session is refused while a recorded STOP has not been acted on', async () => {
    const { restored } = await killedAfter('stop', 'kept candidate')
    const outcome = await call(host, restored, 'write', { path: 'answer.txt', content: 'edited after the stop' })
    expect(outcome.error?.code).to.equal('VALIDATION_MISSING')
    // The refusal's details reach the tool result like any coded refusal's (docs/host.md, "Details survive").
    const [decision] = await recoveryRecords(restored, 'decision')
    expect(outcome.error?.details).to.deep.include({ decisionId: decision.payload.decisionId, stopReason: 'unverified' })
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('kept candidate')
    expect(await phase(host, restored)).to.include({ phase: 'paused', pauseReason: 'recovery' })
  })

  it('a STOP from the completion gate at a reviewer\'s pass is re-applied though the verdict wrote a task record before the kill', async () => {
    // The check pins README.md; the reviewer's turn rewrites it, so the gate's second ask STOPs (pin_changed).
    const { task, restored } = await killedAfter('review-stop', 'right', [{ ...ANSWER_CHECK, pin: ['README.md'] }])

    const decisions = await recoveryRecords(restored, 'decision')
    expect(decisions.at(-1)!.payload).to.include({ action: 'STOP', stopReason: 'pin_changed' })
    // The verdict's task record (the vetoed pass: back to work) follows the STOP; its pause never came.
    expect((await phase(host, restored)).phase).to.equal('active')

    const outcome = await call(host, restored, 'write', { path: 'answer.txt', content: 'edited after the stop' })
    expect(outcome.error?.code).to.equal('CHECK_PINNED')
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('right')
    expect(await phase(host, restored)).to.include({ phase: 'paused', pauseReason: 'recovery', id: task.id })
  })

  it('a consultation of the main session is refused too while a recorded STOP has not been acted on', async () => {
    const { restored } = await killedAfter('stop', 'kept candidate')
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: restored.id })
    const outcome = await call(host, consultation, 'write', { path: 'answer.txt', content: 'edited by the consultation' })
    expect(outcome.error?.code).to.equal('VALIDATION_MISSING')
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('kept candidate')
    expect(await phase(host, restored)).to.include({ phase: 'paused', pauseReason: 'recovery' })
  })

  it('a sub-agent a consultation started (its parent: the consultation) is refused too while a recorded STOP has not been acted on', async () => {
    const { restored } = await killedAfter('stop', 'kept candidate')
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: restored.id })
    const child = await host.ctx.sessions.create({ cwd, role: 'subagent', parentId: consultation.id })
    const outcome = await call(host, child, 'write', { path: 'answer.txt', content: 'edited by the consultation\'s sub-agent' })
    expect(outcome.error?.code).to.equal('VALIDATION_MISSING')
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('kept candidate')
    expect(await phase(host, restored)).to.include({ phase: 'paused', pauseReason: 'recovery' })
  })

  it('a budget STOP whose pause was lost: /task resume pauses (budget) and refuses BUDGET_EXHAUSTED naming the budget, as the paused task does', async () => {
    const { task, restored, decision } = await killedAfterBudgetStop({ budgets: { maxAttempts: 1 } })
    again!.scripted.script('main', [{ toolCalls: [{ name: 'write', args: { path: 'answer.txt', content: 'edited after the stop' } }] }])
    const resumed = await again!.ctx.commands.input(restored, '/task resume')
    expect(resumed?.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect(resumed?.error?.message).to.match(/paused now and nothing ran/).and.to.match(/attempts budget is used up \(1 of 1, recovery budgets\.maxAttempts\)/)
      .and.to.match(/Raise budgets\.maxAttempts/)
    expect(resumed?.error?.details).to.deep.include({ budget: 'attempts', key: 'maxAttempts', limit: 1, used: 1, decisionId: decision.payload.decisionId })
    expect(await phase(again!, restored)).to.include({ phase: 'paused', pauseReason: 'budget', id: task.id })
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('kept candidate')
    expect(await pausesOf(restored, task.id)).to.have.length(1)

    // Now the pause is recorded: the ordinary path answers the same, and nothing changes.
    const revision = (await phase(again!, restored)).revision
    const second = await again!.ctx.commands.input(restored, '/task resume')
    expect(second?.error?.code).to.equal('BUDGET_EXHAUSTED')
    expect(second?.error?.message).to.match(/stays paused: its attempts budget is used up \(1 of 1, recovery budgets\.maxAttempts\)/)
    expect(await phase(again!, restored)).to.include({ phase: 'paused', pauseReason: 'budget', revision })
    expect((await again!.ctx.supervisor.status(restored)).task).to.include({ phase: 'paused', pauseReason: 'budget' })
    await again!.ctx.recovery.settled()
    expect(again!.scripted.pending('main')).to.equal(1)
  })

  it('a budget STOP whose pause was lost, restarted with the budget raised: /task resume records the pause and resumes past it', async () => {
    const { task, restored } = await killedAfterBudgetStop({ budgets: { maxAttempts: 3 } })
    again!.scripted.script('main', [{ text: 'continuing' }])
    const resumed = await again!.ctx.commands.input(restored, '/task resume')
    expect(resumed?.error).to.equal(undefined)
    expect(resumed?.reply).to.include({ phase: 'active', taskId: task.id })
    // The STOP was acted on (one budget pause), then resumed: the log says what happened.
    const pauses = await pausesOf(restored, task.id)
    expect(pauses).to.have.length(1)
    expect(pauses[0].data.payload.pauseReason).to.equal('budget')
    expect((await phase(again!, restored)).phase).to.equal('active')
  })
})

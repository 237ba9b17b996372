import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { removeTree, TestHost } from '@taskward/testkit'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { RecoveryPlugin } from '../src'
import { ANSWER_CHECK, answerWorkspace, readyTask, recoveryRecords, reviewsSettled, scriptReview, until } from './fixtures'

/** One scripted main-agent turn: these tool calls, then an empty step that ends the turn. */
const turn = (...calls: { name: string, args?: Record<string, unknown> }[]) => [{ toolCalls: calls }, {}]

async function controllerTurns(session: Session): Promise<string[]> {
  const events = await session.read({ from: 0, limit: 10000 })
  return events.filter((e) => e.type === 'user/message' && e.data.origin === 'controller').map((e) => e.data.text)
}

/**
 * The supervisor's continuation asks for a progress review after turns without a stage report; the
 * recovery controller extends that signal with objective deltas instead of adding a loop detector.
 */
describe('recovery: objective deltas feed the supervisor\'s progress signal', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    host = await TestHost.boot({
      plugins: [[WorkspacePlugin, {}], [SupervisorPlugin, { automaticContinuation: true, progressReviewAfterTurns: 2 }], [RecoveryPlugin, {}]],
      waitFor: ['workspace', 'supervisor', 'recovery'],
    })
    cwd = await answerWorkspace('alpha')
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  async function armedTask() {
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    await until(() => host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued), 'agents idle')
    // The baseline measurement: the check fails with "wrong answer: alpha".
    const baseline = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(baseline.verdict).to.equal('FAIL')
    return { session, task }
  }

  async function settle(session: Session) {
    await until(() => host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued), 'agents idle')
    await reviewsSettled(host, session)
  }

  it('turns that make a check pass are progress: the task continues without a progress review', async () => {
    const { session } = await armedTask()
    host.scripted.script('main', [
      ...turn({ name: 'write', args: { path: 'answer.txt', content: 'right' } }),
      ...turn({ name: 'read', args: { path: 'README.md' } }),
      { text: 'Checked; nothing else to do for now.' },
    ])
    await host.ctx.supervisor.continueTask(session.id, 'Fix the answer.')
    // The measurement runs after the second turn; the third turn is the follow-up it leads to.
    await until(() => host.scripted.pending('main') === 0, 'the scripted turns to be played')
    await settle(session)
    const state = await host.ctx.supervisor.state(session)
    expect(state.reviews.filter((job) => job.kind === 'progress')).to.have.length(0)
    const turns = await controllerTurns(session)
    expect(turns.at(-1)).to.include('Objective progress since the last measurement: newly passing: answer')
    const attempts = await recoveryRecords(session, 'attempt')
    expect(attempts.map(({ payload }) => payload.agentClaim)).to.deep.equal(['progress', 'progress'])
    expect(attempts[1].payload.checks[0].verdict).to.equal('PASS')
  })

  it('turns that change nothing objective lead to the progress review, whatever the agent writes', async () => {
    const { session } = await armedTask()
    scriptReview(host, 'revise', ['the answer file was never changed'])
    host.scripted.script('main', [
      ...turn({ name: 'read', args: { path: 'answer.txt' } }),
      { text: 'I am making great progress.', toolCalls: [{ name: 'read', args: { path: 'README.md' } }] }, {},
      { text: 'Understood.' },
    ])
    await host.ctx.supervisor.continueTask(session.id, 'Fix the answer.')
    await until(async () => (await host.ctx.supervisor.state(session)).reviews.some((job) => job.kind === 'progress' && job.status === 'finished'), 'progress review')
    await settle(session)
    const turns = await controllerTurns(session)
    expect(turns.some((text) => text.includes('Objective progress'))).to.equal(false)
    const [first, second] = (await recoveryRecords(session, 'attempt')).map(({ payload }) => payload)
    // The measurement is in the log: same candidate, same failure.
    expect(second.agentClaim).to.equal('progress')
    expect(second.checks[0].verdict).to.equal('FAIL')
    expect(second.candidate.digest).to.equal(first.candidate.digest)
    expect(second.checks[0].signature).to.equal(first.checks[0].signature)
  })
})

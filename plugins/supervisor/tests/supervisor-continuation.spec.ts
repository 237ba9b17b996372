import { expect } from 'chai'
import type { Agent, Session } from '@taskward/host'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  SMALL_PLAN, allIdle, bootSupervisor, command, controllerTurns, scriptReviews, supervisorOf, turn, until, verdict, workspace,
} from './fixtures'

/** Start a node, write its file and report it citing the write's result. */
const buildNode = (nodeId: string) => turn(
  [{ name: 'task_start_node', args: { nodeId } }, { name: 'write', args: { path: `src/${nodeId}.ts`, content: `// ${nodeId}\n` } }],
  ({ session }) => ({ toolCalls: [{ name: 'task_report_stage', args: { nodeId, evidenceSeqs: [session.seq - 1] } }] }),
)

const readme = () => turn([{ name: 'read', args: { path: 'README.md' } }])

describe('supervisor: continuation', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  let agent: Agent

  async function boot(config: Record<string, unknown> = {}) {
    host = await bootSupervisor(config)
    cwd = await workspace()
    ;({ session, agent } = await supervisorOf(host).startSession({ cwd }))
  }
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  const state = () => supervisorOf(host).state(session)

  it('the main agent drives a whole task through controller follow-ups and reviews', async () => {
    await boot()
    host.scripted.script('main', [
      ...turn([{ name: 'task_submit_plan', args: { acceptanceCriteria: ['greets'], nodes: [{ id: 'a', title: 'greet' }] } }]),
      ...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }]),
      ...buildNode('a'),
      ...buildNode('b'),
      ...buildNode('b'),
      ...turn([{ name: 'task_request_completion', args: { summary: 'done' } }]),
    ])
    scriptReviews(host, verdict('revise', ['add a test node']), 'pass', 'pass', verdict('revise', ['test the empty name']), 'pass', 'pass')

    await command(host, session, '/task new greet the user')
    await until(async () => (await state()).current!.phase === 'awaiting-approval', 'plan approval')
    await allIdle(host, session)
    await command(host, session, '/task approve')
    await until(async () => (await state()).current!.phase === 'complete', 'completion', 10000)
    await allIdle(host, session)

    const task = (await state()).current!
    expect(task.nodeRuns.b).to.include({ status: 'passed' })
    expect(task.nodeRuns.b.review).to.include({ verdict: 'pass' })
    expect(host.scripted.pending('main')).to.equal(0)
    expect(host.scripted.pending('reviewer')).to.equal(0)
    const turns = await controllerTurns(session)
    expect(turns).to.have.length(6)
    expect(turns[0]).to.match(/Plan the work/)
    expect(turns[1]).to.match(/add a test node/)
    expect(turns[2]).to.match(/Ready nodes:\n- "a"/)
    expect(turns[3]).to.match(/Ready nodes:\n- "b"/)
    expect(turns[4]).to.match(/test the empty name/)
    expect(turns[5]).to.match(/task_request_completion/)
    expect(supervisorOf(host).controller.status(session.id, task)).to.include({ armed: false, awaitingManualResume: false })
  })

  it('restart keeps the same state, continues nothing, and /task resume brings the agent back', async () => {
    await boot()
    host.scripted.script('main', [...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }]), ...buildNode('a')])
    scriptReviews(host, 'pass', 'pass')
    await command(host, session, '/task new greet the user')
    await until(async () => (await state()).current!.phase === 'awaiting-approval', 'plan approval')
    await allIdle(host, session)
    await command(host, session, '/task approve')
    await until(async () => (await state()).current!.nodeRuns.a.status === 'passed', 'node a')
    await allIdle(host, session)
    const before = await state()
    expect(before.current!.phase).to.equal('active')

    await host.restart()
    session = await host.ctx.sessions.get(session.id)
    const seq = session.seq
    expect(await state()).to.deep.equal(before)
    expect(host.ctx.agents.get(session.id)).to.equal(undefined)
    const status = await supervisorOf(host).status(session)
    expect(status.controller).to.include({ armed: false, awaitingManualResume: true })
    host.scripted.script('main', [...buildNode('b'), ...turn([{ name: 'task_request_completion', args: {} }])])
    scriptReviews(host, 'pass', 'pass')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(session.seq).to.equal(seq)
    expect(host.scripted.pending('main')).to.equal(5)

    const reply = await command(host, session, '/task resume')
    expect(reply.message).to.match(/the agent continues/)
    await until(async () => (await state()).current!.phase === 'complete', 'completion after resume', 10000)
    expect((await controllerTurns(session)).at(-2)).to.match(/Ready nodes:\n- "b"/)
  })

  it('after a restart mid-review, /task resume records the restart pause and re-runs the review', async () => {
    await boot({ automaticContinuation: false })
    host.scripted.script('main', [...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }])])
    host.scripted.script('reviewer', [() => new Promise(() => {})])
    await command(host, session, '/task new greet the user')
    agent.followup('plan it')
    await until(async () => (await state()).current!.phase === 'reviewing', 'plan review')
    const interrupted = (await state()).current!
    await host.restart()
    session = await host.ctx.sessions.get(session.id)
    expect((await state()).current).to.deep.equal(interrupted)

    scriptReviews(host, 'pass')
    await command(host, session, '/task resume')
    await until(async () => (await state()).current!.phase === 'awaiting-approval', 'plan approval after resume')
    await allIdle(host, session)
    const final = await state()
    const events = await session.read({ from: 0, limit: 1000 })
    const phases = events.filter((e) => e.type === 'extension/record' && e.data.kind === 'state').map((e) => e.data.payload)
    const paused = phases.find((t) => t.phase === 'paused')
    expect(paused).to.include({ pauseReason: 'restart', resumePhase: 'reviewing', revision: interrupted.revision + 1 })
    expect(final.reviews.map((j) => j.status)).to.deep.equal(['failed', 'finished'])
    expect(final.reviews[0].jobId).to.equal(interrupted.pendingReview!.jobId)
  })

  it('stops after a turn without any tool call', async () => {
    await boot()
    host.scripted.script('main', [{ text: 'I would rather ask the user first.' }, ...readme()])
    await command(host, session, '/task new greet the user')
    await allIdle(host, session)
    expect(await controllerTurns(session)).to.have.length(1)
    expect(host.scripted.pending('main')).to.equal(2)
  })

  it('caps follow-ups at maxContinuations per approval', async () => {
    await boot({ maxContinuations: 2, progressReviewAfterTurns: 100 })
    host.scripted.script('main', [...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }])])
    scriptReviews(host, 'pass')
    await command(host, session, '/task new greet the user')
    await until(async () => (await state()).current!.phase === 'awaiting-approval', 'plan approval')
    await allIdle(host, session)
    host.scripted.script('main', [...readme(), ...readme(), ...readme(), ...readme()])
    await command(host, session, '/task approve')
    await allIdle(host, session)
    expect(await controllerTurns(session)).to.have.length(3)
    expect(host.scripted.pending('main')).to.equal(4)
    expect((await supervisorOf(host).status(session)).controller).to.include({ armed: false, continuationsLeft: 0 })
  })

  it('asks for a progress review after turns without a stage report and passes its findings on', async () => {
    await boot({ progressReviewAfterTurns: 2 })
    host.scripted.script('main', [...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }])])
    scriptReviews(host, 'pass')
    await command(host, session, '/task new greet the user')
    await until(async () => (await state()).current!.phase === 'awaiting-approval', 'plan approval')
    await allIdle(host, session)
    host.scripted.script('main', [...readme(), ...readme(), { text: 'ok' }])
    scriptReviews(host, verdict('revise', ['stop reading the README; start node a']))
    await command(host, session, '/task approve')
    await until(async () => (await state()).reviews.some((j) => j.kind === 'progress' && j.status === 'finished'), 'progress review')
    await allIdle(host, session)
    const progress = (await state()).reviews.find((j) => j.kind === 'progress')!
    expect(progress).to.include({ verdict: 'revise', taskRevision: (await state()).current!.revision })
    const turns = await controllerTurns(session)
    // The planning turn, two turns reading the README, then the review's findings.
    expect(turns).to.have.length(4)
    expect(turns[3]).to.match(/progress reviewer says:\n- stop reading the README; start node a/)
  })

  it('with automaticContinuation off queues nothing after approval, but /task resume follows up once', async () => {
    await boot({ automaticContinuation: false })
    host.scripted.script('main', [...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }])])
    scriptReviews(host, 'pass')
    await command(host, session, '/task new greet the user')
    expect(await controllerTurns(session)).to.have.length(0)
    agent.followup('please plan')
    await until(async () => (await state()).current!.phase === 'awaiting-approval', 'plan approval')
    await allIdle(host, session)
    host.scripted.script('main', [...readme(), ...readme()])
    await command(host, session, '/task approve')
    await allIdle(host, session)
    expect(await controllerTurns(session)).to.have.length(0)
    await command(host, session, '/task resume')
    await allIdle(host, session)
    expect(await controllerTurns(session)).to.have.length(1)
    expect(host.scripted.pending('main')).to.equal(2)
  })
})

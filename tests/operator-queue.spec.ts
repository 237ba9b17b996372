import { expect } from 'chai'
import type { ModelStep } from '@taskward/host'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { RECORD_EVENT_TYPE } from '@taskward/protocol'
import { bootOperatorHost, createSession, until, type OperatorHost } from './operator-fixtures'

/** The queue policy while a review is pending (the supervisor holds the main agent's queue; no console loaded). */
describe('operator queue policy during a review', function () {
  this.timeout(30_000)
  let op: OperatorHost
  let openReview: () => void
  beforeEach(async () => {
    op = await bootOperatorHost([[SupervisorPlugin, { automaticContinuation: false }]], ['supervisor'])
    const gate = new Promise<void>((resolve) => openReview = resolve)
    op.host.scripted.script('reviewer', [async (): Promise<ModelStep> => {
      await gate
      return { toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: ['fine'], evidenceSeqs: [] } }] }
    }])
  })
  afterEach(async () => {
    openReview()
    await op.dispose()
  })

  /** A session (in `cwd`) whose task's plan was submitted: its review is pending and its queue held. */
  async function planUnderReview(cwd: string) {
    const id = await createSession(op.host, { cwd, create: true })
    const session = await op.host.ctx.sessions.get(id)
    expect((await op.host.http.post(`/api/sessions/${id}/input`, { text: '/task new Write a greeting' })).status).to.equal(200)
    const submitted = await op.host.ctx.tools.execute(session, 'task_submit_plan', {
      acceptanceCriteria: ['greets'], nodes: [{ id: 'a', title: 'greet' }],
    }, { agentId: id })
    expect(submitted.error).to.equal(undefined)
    const agent = op.host.ctx.agents.get(id)!
    await until(() => agent.held, 'the queue to be held during the review')
    return { id, session, agent }
  }

  it('holds chat that arrives while the plan is under review, and runs it as the next turn after the verdict', async () => {
    const { id, session, agent } = await planUnderReview('held')
    const http = op.host.http

    op.host.scripted.script('main', [{ text: 'Answered after the review.' }])
    const response = await http.post(`/api/sessions/${id}/input`, { text: 'What are you doing?' })
    expect(response.status).to.equal(202)
    expect(await response.json()).to.include({ kind: 'queued', position: 0, running: false, held: true })
    const { body: queue } = await http.json(`/api/sessions/${id}/queue`)
    expect(queue).to.include({ state: 'idle', held: true })
    expect(queue.items.map((item: any) => item.text)).to.deep.equal(['What are you doing?'])
    const texts = async () => (await session.read({ limit: 1000 })).filter((e) => e.type === 'user/message').map((e) => e.data.text)
    expect(await texts()).to.not.include('What are you doing?')

    openReview()
    await until(async () => (await session.read({ limit: 1000 })).some((e) => e.type === 'assistant/message'), 'the held turn to run')
    expect(agent.held).to.equal(false)
    const log = await session.read({ limit: 1000 })
    const asked = log.find((e) => e.type === 'user/message' && e.data.text === 'What are you doing?')!
    const lastRecord = log.findLast((e) => e.type === RECORD_EVENT_TYPE && e.seq < asked.seq)
    expect(lastRecord, 'the verdict is recorded before the held turn').to.not.equal(undefined)
    expect((await op.host.ctx.supervisor.state(session)).current!.phase).to.equal('awaiting-approval')
    // Nothing of the turn came before the verdict.
    expect(log.filter((e) => e.seq < asked.seq && e.type === 'assistant/message')).to.have.length(0)
  })

  // The hold lived only in the supervisor instance that saw the task enter review: unloaded and loaded
  // again (a config reload) while the review was pending, the new one held nothing, and chat typed
  // meanwhile ran a turn in the workspace under review.
  it('still holds the queue after the supervisor is reloaded while the review is pending', async () => {
    const { session, agent } = await planUnderReview('reloaded')

    ;(op.host.ctx as any).registry.get(SupervisorPlugin).dispose()
    await until(() => !op.host.ctx.get('supervisor'), 'the supervisor to go away')
    op.host.ctx.plugin(SupervisorPlugin, { automaticContinuation: false })
    await until(() => !!op.host.ctx.get('supervisor'), 'the supervisor to come back')
    expect((await op.host.ctx.supervisor.state(session)).current!.phase).to.equal('reviewing')
    await until(() => agent.held, 'the reloaded supervisor to hold the queue of the task under review')
  })

  // After a restart the agent comes back (resumed by the input itself) while the task is still under
  // review: no state is announced then, so nothing held it and the chat ran as a turn at once.
  it('holds chat to an agent brought back after a restart while the review is pending', async () => {
    const { id } = await planUnderReview('restarted')

    await op.host.restart()
    const session = await op.host.ctx.sessions.get(id)
    expect(op.host.ctx.agents.get(id), 'no agent before the input brings it back').to.equal(undefined)
    // A pooled keep-alive connection to the stopped server fails once; nothing is sent on it.
    await op.host.http.json('/health').catch(() => undefined)
    op.host.scripted.script('main', [{ text: 'Answered during the review.' }])
    const response = await op.host.http.post(`/api/sessions/${id}/input`, { text: 'Still there?' })
    expect(response.status).to.equal(202)
    const agent = op.host.ctx.agents.get(id)!
    await until(() => agent.held, 'the brought-back agent to be held')
    expect((await op.host.ctx.supervisor.state(session)).current!.phase).to.equal('reviewing')
    const log = await session.read({ limit: 1000 })
    expect(log.filter((e) => e.type === 'user/message').map((e) => e.data.text)).to.not.include('Still there?')
    expect(log.filter((e) => e.type === 'assistant/message')).to.have.length(0)
  })

  it('lets only the newest announced state decide: a late "reviewing" state does not hold the queue again', async () => {
    const id = await createSession(op.host, { cwd: 'order', create: true })
    const agent = op.host.ctx.agents.get(id)!
    const state = (phase: string, asOfSeq: number) => ({ asOfSeq, current: { phase } }) as any
    op.host.ctx.emit('supervisor/changed', id, state('reviewing', 10))
    expect(agent.held).to.equal(true)
    op.host.ctx.emit('supervisor/changed', id, state('active', 12))
    expect(agent.held).to.equal(false)
    op.host.ctx.emit('supervisor/changed', id, state('reviewing', 11))
    expect(agent.held).to.equal(false)
    op.host.ctx.emit('supervisor/changed', id, state('reviewing', 13))
    expect(agent.held).to.equal(true)
    // Stop still clears a held queue.
    agent.followup('waiting')
    expect((await (await op.host.http.post(`/api/sessions/${id}/cancel`, {})).json() as any).dropped).to.have.length(1)
  })
})

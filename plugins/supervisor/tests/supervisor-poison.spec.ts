import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { RECORD_EVENT_TYPE, taskStateEnvelope, TaskwardError, type Task } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import {
  approvedTask, completedTask, ok, refused, supervisorOf, until, useSupervisedSession,
} from './fixtures'

describe('supervisor: poisoned projection', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useSupervisedSession((env) => ({ host, cwd, session } = env))

  const forge = (task: Task) => session.append(RECORD_EVENT_TYPE, taskStateEnvelope(task))

  async function expectBlocked(seq: number, pattern: RegExp) {
    const state = await supervisorOf(host).state(session)
    expect(state.poisoned?.seq).to.equal(seq)
    expect(state.poisoned?.message).to.match(pattern)
    const denied = await refused(host, session, 'task_start_node', { nodeId: 'a' }, 'SUPERVISOR_POISONED')
    expect(denied.message).to.match(/inspects the session log/)
    // The poisoned message is one sentence inside the refusal: never a doubled period.
    expect(denied.message).to.not.match(/\.\.(\s|$)/)
    expect(state.poisoned?.message).to.not.match(/\.$/)
    await refused(host, session, 'write', { path: 'x.md', content: 'x' }, 'SUPERVISOR_POISONED')
    await ok(host, session, 'task_status')
    await ok(host, session, 'read', { path: 'README.md' })
    return state
  }

  it('poisons on a forged record that skips a revision, ignores later records and blocks execution', async () => {
    const task = await approvedTask(host, session)
    const forged = await forge({ ...task, revision: task.revision + 2 })
    const state = await expectBlocked(forged.seq, /revisions must be contiguous/)
    // A later, otherwise valid record is ignored: the failure stays the first one.
    await forge({ ...task, revision: task.revision + 1, phase: 'paused', pauseReason: 'user', resumePhase: 'active' })
    const later = await supervisorOf(host).state(session)
    expect(later.current).to.deep.equal(state.current)
    expect(later.poisoned).to.deep.equal(state.poisoned)
    const status = await ok(host, session, 'task_status')
    expect(status.poisoned.seq).to.equal(forged.seq)
    expect(status.availableActions).to.deep.equal([])
  })

  it('poisons on a record of an unsupported schema version, saying so in one sentence (no doubled period)', async () => {
    const task = await approvedTask(host, session)
    const forged = await session.append(RECORD_EVENT_TYPE, { ...taskStateEnvelope({ ...task, revision: task.revision + 1 }), schemaVersion: 99 })
    await expectBlocked(forged.seq, /schema version 99/)
  })

  it('poisons on complete → active without a confirmed repair', async () => {
    const task = await completedTask(host, session)
    const { completedAt, completionReview, ...rest } = task
    const forged = await forge({ ...rest, revision: task.revision + 1, phase: 'active' })
    await expectBlocked(forged.seq, /reopened without a confirmed repair/)
  })

  it('refuses agent steps of a poisoned main session with SUPERVISOR_POISONED', async () => {
    const { session: main, agent } = await supervisorOf(host).startSession({ cwd })
    await host.ctx.commands.input(main, '/task new poisoned')
    const task = (await supervisorOf(host).state(main)).current!
    await main.append(RECORD_EVENT_TYPE, taskStateEnvelope({ ...task, revision: 5 }))
    host.scripted.script('main', [{ toolCalls: [{ name: 'write', args: { path: 'x.md', content: 'x' } }] }])
    agent.followup('do something')
    await agent.whenIdle()
    const events = await main.read({ from: 0, limit: 100 })
    const refusal = events.find((e) => e.type === 'agent/refused')
    expect(refusal?.data.code).to.equal('SUPERVISOR_POISONED')
    expect(events.some((e) => e.type === 'tool/call')).to.equal(false)
    expect(host.scripted.pending('main')).to.equal(1)
  })

  it('holds a consultation of a poisoned main session to the same inspection-only rule, tools and steps', async () => {
    const task = await approvedTask(host, session)
    const agent = await host.ctx.agents.create({ cwd, model: 'scripted', role: 'consultation', parentId: session.id })
    const consultation = agent.session
    await ok(host, consultation, 'write', { path: 'before.md', content: 'fine\n' })
    const forged = await forge({ ...task, revision: task.revision + 2 })
    expect((await supervisorOf(host).state(session)).poisoned?.seq).to.equal(forged.seq)

    const denied = await refused(host, consultation, 'write', { path: 'consult.md', content: 'no\n' }, 'SUPERVISOR_POISONED')
    expect(denied.message).to.match(new RegExp(`Session ${session.id}, which this session works for`))
    await refused(host, consultation, 'edit', { path: 'before.md', old: 'fine', new: 'changed' }, 'SUPERVISOR_POISONED')
    await refused(host, consultation, 'supervisor_propose_repair', {}, 'SUPERVISOR_POISONED')
    await ok(host, consultation, 'read', { path: 'before.md' })
    await ok(host, consultation, 'grep', { pattern: 'fine' })

    // Its agent takes no step at all, like the main agent.
    host.scripted.script(consultation.role, [{ toolCalls: [{ name: 'write', args: { path: 'agent.md', content: 'x' } }] }])
    agent.followup('write something')
    await agent.whenIdle()
    const events = await consultation.read({ from: 0, limit: 100 })
    expect(events.find((e) => e.type === 'agent/refused')?.data.code).to.equal('SUPERVISOR_POISONED')
    expect(events.some((e) => e.type === 'tool/call' && e.data.name === 'write' && e.data.args.path === 'agent.md')).to.equal(false)
    expect(host.scripted.pending(consultation.role)).to.equal(1)
    expect(existsSync(join(cwd, 'consult.md'))).to.equal(false)
    expect(existsSync(join(cwd, 'agent.md'))).to.equal(false)
  })

  it('transact checks every record first: a poisoning record writes nothing, not even the valid ones before it', async () => {
    const task = await approvedTask(host, session)
    const seq = session.seq
    const error = await supervisorOf(host).transact(session, () => ({
      records: [
        taskStateEnvelope({ ...task, revision: task.revision + 1, phase: 'paused', pauseReason: 'user', resumePhase: 'active' }),
        taskStateEnvelope({ ...task, revision: task.revision + 5 }),
      ],
      result: undefined,
    })).then(() => undefined, (e) => e)
    expect(error).to.be.instanceOf(TaskwardError)
    expect(error.code).to.equal('TASK_INVALID')
    expect(error.message).to.match(/Nothing was written/)
    expect(session.seq).to.equal(seq)
    expect((await supervisorOf(host).state(session)).current).to.deep.equal(task)
  })

  it('transact serializes per session: each transition sees the state the previous one left', async () => {
    const task = await approvedTask(host, session)
    const sup = supervisorOf(host)
    const results = await Promise.allSettled(['a', 'a', 'a'].map((nodeId) =>
      sup.apply(session, (t, at) => {
        if (t!.nodeRuns[nodeId].status === 'running') throw new TaskwardError('TASK_NOT_EXECUTING', 'already running')
        return { ...t!, revision: t!.revision + 1, nodeRuns: { ...t!.nodeRuns, [nodeId]: { ...t!.nodeRuns[nodeId], status: 'running' } } }
      })))
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected'])
    const state = await sup.state(session)
    expect(state.current!.revision).to.equal(task.revision + 1)
    expect(state.poisoned).to.equal(undefined)
  })

  it('emits supervisor/changed after each append with the new state', async () => {
    const seen: [string, number | undefined][] = []
    host.ctx.on('supervisor/changed', (sessionId, state) => { seen.push([sessionId, state.current?.revision]) })
    await host.ctx.commands.input(session, '/task new announce')
    await until(() => seen.length >= 1, 'supervisor/changed')
    expect(seen).to.deep.equal([[session.id, 1]])
  })
})

import { expect } from 'chai'
import type { Session } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'
import { taskStatusText } from '@taskward/protocol'
import {
  approvedTask, command, commandError, completedTask, ok, refused, reviewsSettled, scriptReviews, supervisorOf, useSupervisedSession,
} from './fixtures'

describe('supervisor: /task commands', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useSupervisedSession((env) => ({ host, cwd, session } = env))

  const current = async () => (await supervisorOf(host).state(session)).current!

  it('/task alone shows the status; without a task it says how to start one', async () => {
    const empty = await command(host, session, '/task')
    expect(empty.availableActions).to.deep.equal(['await-new-task'])
    expect(empty).to.not.have.property('task')
    await command(host, session, '/task new show me')
    const status = await command(host, session, '/task')
    expect(status.task).to.include({ phase: 'planning', objective: 'show me', revision: 1 })
    expect(status.availableActions).to.deep.equal(['task_submit_plan'])
  })

  it('/task status carries the status in words (statusText, the text DSH shows); --json is the view alone', async () => {
    await approvedTask(host, session)
    const status = await command(host, session, '/task status')
    expect(status.statusText).to.equal(taskStatusText(await supervisorOf(host).status(session)))
    expect(status.statusText).to.include('Phase: active').and.include('  a: write greeting — pending').and.include('Next: the agent starts node a (task_start_node).')
    const json = await command(host, session, '/task status --json')
    expect(json).to.not.have.property('statusText')
    expect(json.task).to.deep.equal(status.task)
    expect(await command(host, session, '/task --json')).to.not.have.property('statusText')
    expect((await commandError(host, session, '/task status --yaml')).code).to.equal('TASK_INVALID')
  })

  it('refuses a stale binding with TASK_STALE and accepts the current one', async () => {
    await command(host, session, '/task new bound approval')
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    const task = await current()
    const stale = await commandError(host, session, `/task approve ${task.id}@${task.revision - 1}`)
    expect(stale.code).to.equal('TASK_STALE')
    expect(stale.message).to.match(/Read the task status and retry/)
    expect((await commandError(host, session, `/task approve other@${task.revision}`)).code).to.equal('TASK_STALE')
    expect((await commandError(host, session, '/task approve soon')).code).to.equal('TASK_INVALID')
    expect((await current()).phase).to.equal('awaiting-approval')
    const approved = await command(host, session, `/task approve ${task.id}@${task.revision}`)
    expect(approved).to.include({ phase: 'active', revision: task.revision + 1 })
  })

  it('pause and resume return to the phase the task was paused from', async () => {
    await approvedTask(host, session)
    const paused = await command(host, session, '/task pause')
    expect(paused.phase).to.equal('paused')
    expect(await current()).to.include({ pauseReason: 'user', resumePhase: 'active' })
    await refused(host, session, 'task_start_node', { nodeId: 'a' }, 'TASK_NOT_EXECUTING')
    expect((await commandError(host, session, '/task pause')).code).to.equal('TASK_NOT_EXECUTING')
    const resumed = await command(host, session, '/task resume')
    expect(resumed.phase).to.equal('active')
    expect(await current()).to.not.have.any.keys('pauseReason', 'resumePhase')
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
  })

  it('edit changes the objective and returns an unapproved plan to planning', async () => {
    await command(host, session, '/task new first idea')
    scriptReviews(host, 'pass')
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    await command(host, session, '/task edit better idea')
    expect(await current()).to.include({ objective: 'better idea', phase: 'planning' })
    expect((await commandError(host, session, '/task approve')).code).to.equal('TASK_NOT_EXECUTING')
    expect((await current()).phase).to.equal('planning')
  })

  it('off disables execution and supervision changes; on restores it; repeating writes nothing', async () => {
    const task = await approvedTask(host, session)
    await command(host, session, '/task off')
    expect(await current()).to.include({ enabled: false, revision: task.revision + 1 })
    await refused(host, session, 'task_start_node', { nodeId: 'a' }, 'SUPERVISOR_DISABLED')
    expect((await commandError(host, session, '/task resume')).code).to.equal('SUPERVISOR_DISABLED')
    const seq = session.seq
    await command(host, session, '/task off')
    // The command's own user/message and reply, but no state record.
    const written = await session.read({ from: seq, limit: 10 })
    expect(written.map((e) => e.type)).to.deep.equal(['user/message', 'command/reply'])
    await command(host, session, '/task on')
    expect(await current()).to.include({ enabled: true, revision: task.revision + 2 })
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
  })

  it('clear refuses a complete task (it stays repairable) and a cleared one', async () => {
    await completedTask(host, session)
    const complete = await commandError(host, session, '/task clear')
    expect(complete.code).to.equal('TASK_COMPLETED')
    expect(complete.message).to.match(/stays in history/)
    await command(host, session, '/task new to clear')
    await command(host, session, '/task clear')
    expect((await commandError(host, session, '/task clear')).code).to.equal('TASK_NOT_EXECUTING')
    expect((await commandError(host, session, '/task resume')).code).to.equal('TASK_NOT_EXECUTING')
  })
})

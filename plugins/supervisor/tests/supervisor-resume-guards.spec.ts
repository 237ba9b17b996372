import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { pause, resume, TaskwardError, type Task } from '@taskward/protocol'
import type { TestHost } from '@taskward/testkit'
import { approvedTask, command, commandError, supervisorOf, until, useSupervisedSession } from './fixtures'

describe('supervisor: resume guards added by other plugins', () => {
  let host: TestHost
  let session: Session
  useSupervisedSession((env) => ({ host, session } = env))

  const current = async () => (await supervisorOf(host).state(session)).current!

  /** Load a plugin whose resume guard answers with `guard`; returns its fork and the tasks it was asked about. */
  async function guarded(guard: (task: Task) => TaskwardError | undefined) {
    const asked: Task[] = []
    const fork = host.ctx.plugin({
      name: 'test-resume-guard',
      inject: ['supervisor'],
      apply: (ctx) => {
        ctx.supervisor.registerResumeGuard((_session, task) => {
          asked.push(task)
          return guard(task)
        })
      },
    })
    await new Promise((resolve) => setTimeout(resolve, 0))
    return { fork, asked }
  }

  it('a refusal is the answer of /task resume and leaves the task paused; disposing the plugin withdraws the guard', async () => {
    await approvedTask(host, session)
    await command(host, session, '/task pause')
    const paused = await current()
    const { fork, asked } = await guarded((task) => new TaskwardError('BUDGET_EXHAUSTED', `Task ${task.id} stays paused: test budget.`, { taskId: task.id }))
    const refusal = await commandError(host, session, '/task resume')
    expect(refusal).to.include({ code: 'BUDGET_EXHAUSTED', message: `Task ${paused.id} stays paused: test budget.` })
    expect(asked.map((task) => task.revision)).to.deep.equal([paused.revision])
    expect(await current()).to.deep.equal(paused)
    expect(supervisorOf(host).controller.status(session.id, paused).armed).to.equal(false)

    fork.dispose()
    expect((await command(host, session, '/task resume')).phase).to.equal('active')
  })

  it('a task that changes while the guards are asked is not resumed past them (a budget pause in between stays paused)', async () => {
    await approvedTask(host, session)
    await command(host, session, '/task pause')
    const asked = (await current()).revision
    let release!: () => void
    const held = new Promise<void>((resolve) => release = resolve)
    let reached = false
    const { fork } = await guarded(() => undefined)
    // A second guard that takes its time on the user's pause and refuses a budget pause (as recovery's does).
    const slow = host.ctx.plugin({
      name: 'test-slow-resume-guard',
      inject: ['supervisor'],
      apply: (ctx) => {
        ctx.supervisor.registerResumeGuard(async (_session, task) => {
          if (task.pauseReason === 'budget') return new TaskwardError('BUDGET_EXHAUSTED', `Task ${task.id} stays paused: test budget.`, { taskId: task.id })
          reached = true
          await held
        })
      },
    })
    await new Promise((resolve) => setTimeout(resolve, 0))
    const answer = commandError(host, session, '/task resume')
    await until(() => reached, 'the slow guard to be asked')
    // Meanwhile the task is resumed by another path, runs and is paused for its budget.
    await supervisorOf(host).apply(session, (task, at) => resume(task, {}, at))
    const budgetPaused = await supervisorOf(host).apply(session, (task, at) => pause(task, { reason: 'budget' }, at))
    expect(budgetPaused.revision).to.be.above(asked)
    release()
    const refusal = await answer
    expect(refusal.code).to.equal('TASK_STALE')
    expect(await current()).to.deep.equal(budgetPaused)
    expect((await commandError(host, session, '/task resume')).code).to.equal('BUDGET_EXHAUSTED')
    slow.dispose()
    fork.dispose()
  })

  it('a guard that throws refuses (closed) with INTERNAL; a live task that is not paused is asked about too', async () => {
    const active = await approvedTask(host, session)
    const { fork, asked } = await guarded(() => { throw new Error('guard broke') })
    expect((await commandError(host, session, '/task resume')).code).to.equal('INTERNAL')
    expect(asked.map((task) => task.phase)).to.deep.equal(['active'])
    expect(await current()).to.deep.equal(active)
    await command(host, session, '/task pause')
    const paused = await current()
    const refusal = await commandError(host, session, '/task resume')
    expect(refusal.code).to.equal('INTERNAL')
    expect(refusal.message).to.include('guard broke').and.to.include('The task stays paused')
    expect(await current()).to.deep.equal(paused)
    fork.dispose()
  })
})

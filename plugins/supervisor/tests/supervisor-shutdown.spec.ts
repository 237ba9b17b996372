import { expect } from 'chai'
import type { Context } from 'cordis'
import type { ProgressSignal } from '@taskward/protocol'
import { removeTree, type TestHost } from '@taskward/testkit'
import { SMALL_PLAN, allIdle, bootSupervisor, command, scriptReviews, supervisorOf, turn, until, workspace } from './fixtures'

/**
 * Ctrl-C (disposing the host) while the controller waits for a progress measurement must stop
 * cleanly: the continuation that resumes afterwards finds the host gone and neither throws nor
 * leaves an unhandled rejection (it once crashed with "home.logger is not a function").
 */
describe('supervisor: shutdown during a progress check', () => {
  let host: TestHost
  let cwd: string
  const rejections: unknown[] = []
  const onRejection = (reason: unknown) => { rejections.push(reason) }
  const onException = (error: unknown) => { rejections.push(error) }

  beforeEach(() => {
    rejections.length = 0
    process.on('unhandledRejection', onRejection)
    process.on('uncaughtException', onException)
  })
  afterEach(async () => {
    process.off('unhandledRejection', onRejection)
    process.off('uncaughtException', onException)
    await host?.dispose()
    await removeTree(cwd)
  })

  for (const outcome of [{ progress: false, evidence: 'no check changed' }, { progress: true, evidence: 'a new passing check' }] as ProgressSignal[]) {
    it(`disposing the host while a progress check runs stops cleanly (the check then reports progress: ${outcome.progress})`, async () => {
      let entered!: () => void
      const checking = new Promise<void>((resolve) => { entered = resolve })
      let release!: (signal: ProgressSignal) => void
      const measured = new Promise<ProgressSignal>((resolve) => { release = resolve })
      const slowCheck = {
        name: 'slow-progress-check',
        inject: ['supervisor'],
        apply(ctx: Context) {
          ctx.supervisor.registerProgressSignal(async () => {
            entered()
            return measured
          })
        },
      }
      host = await bootSupervisor({ progressReviewAfterTurns: 1 }, [[slowCheck]])
      cwd = await workspace()
      const { session } = await supervisorOf(host).startSession({ cwd })
      host.scripted.script('main', [...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }])])
      scriptReviews(host, 'pass')
      await command(host, session, '/task new greet the user')
      await until(async () => (await supervisorOf(host).state(session)).current!.phase === 'awaiting-approval', 'plan approval')
      await allIdle(host, session)
      host.scripted.script('main', [...turn([{ name: 'read', args: { path: 'README.md' } }]), ...turn([{ name: 'read', args: { path: 'README.md' } }])])
      await command(host, session, '/task approve')
      await checking

      // Ctrl-C now: the host stops while the controller awaits the measurement.
      await host.stop()
      release(outcome)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(rejections.map(String)).to.deep.equal([])
    })
  }
})

import { expect } from 'chai'
import { storeDriver } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'
import { RECOVERY_PROJECTION_KEY } from '../src/service'
import { answerWorkspace, bootRecovery, closeRecovery, readyTask } from './fixtures'

/**
 * The recovery state is asked before every step and tool call (the STOP replay, the pins): its fold
 * must not wait for the projection cache's own durable write, which a busy disk holds for an fsync.
 */
describe('recovery: reading the recovery state while the disk is slow to flush', function () {
  this.timeout(30_000)
  let host: TestHost | undefined
  let cwd: string | undefined
  afterEach(() => closeRecovery(host, cwd))

  it('answers from the fold at once after a restart; the cache is written behind it once the flush comes', async () => {
    host = await bootRecovery({ checks: [] })
    cwd = await answerWorkspace()
    const { session: before } = await readyTask(host, cwd)
    await host.ctx.recovery.settled()
    // After a restart nothing is folded in memory: the next read starts from the saved cache.
    await host.restart()
    const session = await host.ctx.sessions.get(before.id)
    // An event after the saved cache, appended with nothing folded in memory: the read folds it.
    await session.append('user/message', { text: 'one more thing', origin: 'user' }, { commit: true })
    const flusher = storeDriver(host.ctx).flusher
    const durable = flusher.durable.bind(flusher)
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    flusher.durable = () => held.then(durable)
    let answered: unknown
    let timer: NodeJS.Timeout | undefined
    try {
      const read = host.ctx.recovery.state(session)
      answered = await Promise.race([read, new Promise((resolve) => { timer = setTimeout(() => resolve('still waiting'), 3_000) })])
    } finally {
      clearTimeout(timer)
      release()
      flusher.durable = durable
    }
    expect(answered, 'the state while the flush is held').to.be.an('object').that.has.property('tasks')
    // Still written: describe waits for the cache writes in flight.
    const cached = await host.ctx.projections.describe(session, RECOVERY_PROJECTION_KEY)
    expect(cached?.asOfSeq).to.equal(session.seq - 1)
  })
})

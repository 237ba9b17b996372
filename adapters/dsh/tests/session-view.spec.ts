import { expect } from 'chai'
import { TaskwardError } from '@taskward/protocol'
import { SessionView, type SessionViewHost } from '../src/session-view'

/*
 * What a Taskward append inside DSH answers when DSH's flush fails (a full disk, a broken storage
 * plugin): a coded STORE_UNAVAILABLE saying what may be lost, never DSH's bare error.
 */
describe('DSH adapter: a session whose flush fails', () => {
  const host = (flush: SessionViewHost['flush']): SessionViewHost => ({
    agentOf: () => undefined, roleOf: () => 'main', parentOf: () => '', model: 'm', flush,
  })
  const dsh = { id: 's1', seq: 0, events: [], header: { cwd: '/w', createdAt: 0 } } as any

  it('answers STORE_UNAVAILABLE naming the session; resolves once the flush does', async () => {
    let refusal: unknown
    await new SessionView(host(() => Promise.reject(new Error('ENOSPC: no space left on device'))), dsh).durable().catch((error) => { refusal = error })
    expect(TaskwardError.is(refusal, 'STORE_UNAVAILABLE'), String(refusal)).to.equal(true)
    expect((refusal as TaskwardError).message).to.include('s1').and.include('ENOSPC')
    expect((refusal as TaskwardError).details).to.deep.equal({ sessionId: 's1' })
    await new SessionView(host(() => Promise.resolve()), dsh).durable()
  })

  it('answers STORE_UNAVAILABLE when the flush never settles, instead of hanging the append for ever', async () => {
    const hung: SessionViewHost = { ...host(() => new Promise(() => {})), flushDeadlineMs: 50 }
    const refusal = await new SessionView(hung, dsh).durable().then(() => undefined, (error) => error)
    expect(TaskwardError.is(refusal, 'STORE_UNAVAILABLE'), String(refusal)).to.equal(true)
    expect((refusal as TaskwardError).message).to.include('s1').and.include('did not finish within 50 ms')
  })
})

import { expect } from 'chai'
import { TaskwardError } from '@taskward/protocol'
import { Config } from '../src/index'
import { DshAgentsContract } from '../src/agents'
import { DshSessionsContract } from '../src/sessions'

/*
 * No hangs inside DSH: a session resume (after a restart, a route's or command's first touch) or a flush
 * that never settles ends, for every caller, with STORE_UNAVAILABLE naming the session after the row's
 * `storeDeadlineMs` — it never holds the session's appends and every later request for ever.
 */
describe('DSH adapter: a store that never answers', () => {
  const ctx: any = { logger: () => ({ warn() {} }) }
  const never = () => new Promise<never>(() => {})

  function contract(deadlineMs: number, overrides: { resume?: () => Promise<unknown>, flush?: () => Promise<void> } = {}) {
    const resumes: string[] = []
    const live = new Map<string, any>()
    const dsh: any = {
      sessions: { get: (id: string) => live.get(id), list: () => [...live.values()], flush: overrides.flush ?? (async () => {}) },
      agents: {
        get: () => undefined,
        list: () => [],
        resume: ({ resumeSessionId }: { resumeSessionId: string }) => { resumes.push(resumeSessionId); return (overrides.resume ?? never)() },
      },
    }
    const sessions = new DshSessionsContract(ctx, dsh, 'dsh', () => ({ agents: dsh.agents }), { deadlineMs })
    return { sessions, agents: new DshAgentsContract(ctx, dsh.agents, sessions), resumes, live }
  }

  const coded = async (work: Promise<unknown>) => {
    const error = await work.then(() => undefined, (e) => e)
    expect(TaskwardError.is(error, 'STORE_UNAVAILABLE'), String(error)).to.equal(true)
    return error as TaskwardError
  }

  it('answers STORE_UNAVAILABLE naming the session to every request touching a session whose resume hangs, with one resume', async () => {
    const { sessions, agents, resumes } = contract(40)
    const answers = await Promise.all([coded(sessions.get('s-1')), coded(sessions.get('s-1')), coded(agents.resume('s-1'))])
    for (const error of answers) {
      expect(error.details).to.deep.equal({ sessionId: 's-1' })
      expect(error.message).to.include('s-1').and.include('did not finish within 40 ms (storeDeadlineMs)')
    }
    expect(resumes).to.deep.equal(['s-1'])
    // A later request is bounded the same way (it waits on the same resume, not a second one).
    await coded(sessions.get('s-1'))
    expect(resumes).to.deep.equal(['s-1'])
  })

  it('still answers SESSION_NOT_FOUND for a session DSH refuses to resume', async () => {
    const { sessions } = contract(1000, { resume: () => Promise.reject(new Error('no such session')) })
    const error = await sessions.get('s-2').then(() => undefined, (e) => e)
    expect(TaskwardError.is(error, 'SESSION_NOT_FOUND'), String(error)).to.equal(true)
  })

  it('bounds a hung flush by the configured deadline', async () => {
    const { sessions } = contract(30, { flush: never })
    const dshSession: any = { id: 's-3', seq: 0, events: [], header: { id: 's-3', cwd: '/w', createdAt: 0 } }
    const error = await coded(sessions.view(dshSession).durable())
    expect(error.message).to.include('s-3').and.include('within 30 ms')
  })

  it('takes the deadline from the row\'s storeDeadlineMs (default 30 s) and refuses a bad one', () => {
    expect(Config({})).to.include({ storeDeadlineMs: 30_000 })
    expect(Config({ storeDeadlineMs: 5000 })).to.include({ storeDeadlineMs: 5000 })
    expect(() => Config({ storeDeadlineMs: 0 } as any)).to.throw(/storeDeadlineMs/)
  })
})

import { expect } from 'chai'
import { AdmissionService } from '@taskward/plugin-admission'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { Context } from 'cordis'
import {
  defineReader, REPAIR_NAMESPACE, REVIEW_NAMESPACE, reviewJobReader, TASK_NAMESPACE, TASK_SCHEMA_VERSION, TASK_STATE_KIND, taskStateSchema,
} from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

/*
 * The supervisor with reader admission: its readers (task state 1–11, review jobs 1, repair 1) are
 * registered with `admission` for as long as the supervisor is loaded, whichever plugin loads first.
 */

const until = async (check: () => Promise<boolean> | boolean, what: string) => {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > 5000) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const ranges = (host: TestHost) => host.ctx.admission.readers()
  .map((r) => `${r.namespace} ${r.minVersion}-${r.maxVersion}`).sort()

describe('supervisor with reader admission', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => { cwd = await tempWorkspace({ 'README.md': '# hello\n' }) })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  for (const order of ['supervisor first', 'admission first']) {
    it(`registers the supervisor's readers (${order})`, async () => {
      const plugins: [any, any][] = [[SupervisorPlugin, { automaticContinuation: false }], [AdmissionService, {}]]
      host = await TestHost.boot({ plugins: order === 'supervisor first' ? plugins : plugins.reverse(), waitFor: ['supervisor', 'admission'] })
      // The repair namespace's reader belongs to the repair plugin: without it, repair records block the session.
      expect(ranges(host)).to.deep.equal([`${TASK_NAMESPACE} 1-11`, `${REVIEW_NAMESPACE} 1-1`].sort())
    })
  }

  it('drives a supervised session past admission, and refuses it once the supervisor is unloaded', async () => {
    host = await TestHost.boot({ plugins: [[AdmissionService, {}], [SupervisorPlugin, {}]], waitFor: ['supervisor', 'admission'] })
    const { session } = await host.ctx.supervisor.startSession({ cwd })
    host.scripted.script('main', [{ toolCalls: [{ name: 'task_submit_plan', args: { acceptanceCriteria: ['greets'], nodes: [{ id: 'a', title: 'greet' }] } }] }, {}])
    host.scripted.script('reviewer', [{ toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass' } }] }])
    await host.ctx.commands.input(session, '/task new greet')
    await until(async () => (await host.ctx.supervisor.state(session)).current?.phase === 'awaiting-approval', 'the plan review')
    expect(await host.ctx.admission.refusal(session)).to.equal(undefined)

    host.ctx.registry.delete(SupervisorPlugin)
    const refusal = await host.ctx.admission.refusal(session)
    expect(refusal?.code).to.equal('READER_UNAVAILABLE')
    expect(refusal?.message).to.include(`${TASK_NAMESPACE} v11`).and.to.include(`${REVIEW_NAMESPACE} v1`)
    await host.ctx.agents.resume(session.id).then(() => expect.fail('resume should be refused'), (error) => {
      expect(error.code).to.equal('READER_UNAVAILABLE')
    })
  })

  it('refuses a session with schema-11 task records on an install whose task reader reads only 1–10', async () => {
    host = await TestHost.boot({ plugins: [[AdmissionService, {}], [SupervisorPlugin, {}]], waitFor: ['supervisor', 'admission'] })
    const { session } = await host.ctx.supervisor.startSession({ cwd })
    host.scripted.script('main', [{}])
    await host.ctx.commands.input(session, '/task new greet')
    expect(TASK_SCHEMA_VERSION).to.equal(11)
    // The previous supervisor's readers: task state 1–10 (real schemas), review jobs 1.
    const schemas = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i + 1, taskStateSchema(i + 1)]))
    const previous = defineReader({ namespace: TASK_NAMESPACE, writes: 10, minVersion: 1, kinds: { [TASK_STATE_KIND]: { schemas } } })
    host.ctx.registry.delete(SupervisorPlugin)
    host.ctx.plugin((ctx: Context) => {
      ctx.inject(['admission'], (ctx) => {
        ctx.admission.registerReader(previous)
        ctx.admission.registerReader(reviewJobReader)
      })
    })
    await until(() => ranges(host).includes(`${TASK_NAMESPACE} 1-10`), 'the previous readers')
    const refusal = await host.ctx.admission.refusal(session)
    expect(refusal?.code).to.equal('READER_UNAVAILABLE')
    expect(refusal?.message).to.include(`${TASK_NAMESPACE} v11`)
    expect(await host.ctx.admission.check(session)).to.deep.equal([{ namespace: TASK_NAMESPACE, schemaVersion: 11, firstSeq: 1 }])
    await host.ctx.agents.resume(session.id).then(() => expect.fail('resume should be refused'), (error) => {
      expect(error.code).to.equal('READER_UNAVAILABLE')
    })
  })
})

import { expect } from 'chai'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { newTask } from '@taskward/protocol'
import { OpenAIMock, TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, until } from './helpers'

/*
 * The task state a step shows comes from the optional supervisor service. The route holds the service
 * while it is there (a per-step lookup cost a tracing proxy); it must follow the service as it comes,
 * goes and comes back, never showing a state from a supervisor that was unloaded.
 */
describe('plugin-openai: the task state follows the supervisor service', function () {
  this.timeout(20_000)
  let mock: OpenAIMock
  let host: TestHost
  let cwd: string

  before(async () => {
    mock = await OpenAIMock.start()
    cwd = await tempWorkspace()
    host = await TestHost.boot({ plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model: 'mock-1', maxRetries: 0 }] }]] })
    await until(() => host.ctx.models.routes().includes('mock'))
  })

  after(async () => {
    await host.dispose()
    await mock.close()
    await removeTree(cwd)
  })

  it('shows no state without a supervisor, the task once one is loaded, none once it is unloaded, and the task again after a reload', async () => {
    const route = host.ctx.models.get('mock') as OpenAIPlugin.OpenAIRoute
    const session = await host.ctx.sessions.create({ cwd, role: 'main' })
    await session.append('user/message', { text: 'hello' })
    const request = () => ({ session, role: 'main', input: { text: 'hello', meta: {} }, results: [], step: 0, signal: new AbortController().signal })
    const shown = async () => JSON.stringify(await route.messages(request() as any))

    expect(await shown()).to.not.include(OpenAIPlugin.TASK_STATE_HEADER)

    const load = async () => {
      const fork = host.ctx.plugin(SupervisorPlugin, { reviewerModel: 'scripted' })
      await until(() => !!host.ctx.get('supervisor'), 'the supervisor')
      return fork
    }
    let fork = await load()
    await (host.ctx as any).supervisor.apply(session, (task: any, at: any) => newTask(task, { objective: 'write the first report' }, { ...at, id: 'task-1' }))
    expect(await shown()).to.include(OpenAIPlugin.TASK_STATE_HEADER).and.include('write the first report')

    fork.dispose()
    await until(() => !host.ctx.get('supervisor'), 'the supervisor gone')
    expect(await shown()).to.not.include('write the first report')

    fork = await load()
    expect(await shown()).to.include('write the first report')
    fork.dispose()
  })
})

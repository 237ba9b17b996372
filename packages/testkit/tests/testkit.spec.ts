import { expect } from 'chai'
import type { Context } from 'cordis'
import {
  callTool, driveToApproval, driveToCompletion, proposeAndConfirm, removeTree, reviewsSettled, runCommand, runTool,
  scriptReviewer, tempWorkspace, TestHost, waitFor,
} from '@taskward/testkit'

describe('testkit', () => {
  const hosts: TestHost[] = []
  const dirs: string[] = []
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.dispose()
    for (const dir of dirs.splice(0)) await removeTree(dir)
  })
  const boot = async (options: Parameters<typeof TestHost.boot>[0]) => {
    const host = await TestHost.boot(options)
    hosts.push(host)
    return host
  }
  const workspace = async () => {
    const dir = await tempWorkspace({ 'README.md': '# demo\n' })
    dirs.push(dir)
    return dir
  }

  it('boots plugins by short name with their defaults, and [name, config] with a config', async () => {
    const host = await boot({ plugins: ['supervisor', 'workspace', ['repair', {}]] })
    expect(host.ctx.supervisor.config.automaticContinuation).to.equal(true)
    expect(host.ctx.repair).to.not.equal(undefined)
    expect(host.dataDir).to.be.a('string')
    const other = await boot({ plugins: [['supervisor', { automaticContinuation: false }]] })
    expect(other.ctx.supervisor.config.automaticContinuation).to.equal(false)
  })

  it('loads a plugin object as is, and waits for the services named in waitFor', async () => {
    const plugin = { name: 'mine', apply: (ctx: Context) => { ctx.set('mine' as any, { hello: 'world' }) } }
    const host = await boot({ plugins: [plugin], waitFor: ['mine'] })
    expect((host.ctx as any).mine).to.deep.equal({ hello: 'world' })
  })

  it('refuses an unknown short name, naming the known ones', async () => {
    const error = await TestHost.boot({ plugins: ['supervisr' as any] }).catch((e) => e)
    expect(error.message).to.match(/no plugin is called "supervisr".*supervisor/)
  })

  it('fails boot after its timeout, naming the service that never came up', async () => {
    // `needy` provides its service only once `nobody-provides-this` exists, which never happens.
    const needy = { name: 'needy', inject: ['nobody-provides-this'], apply: (ctx: Context) => { ctx.set('needy' as any, {}) } }
    const error = await TestHost.boot({ plugins: [needy], waitFor: ['needy'], timeout: 300 }).catch((e) => e)
    expect(error).to.be.instanceOf(Error)
    expect(error.message).to.match(/not ready after 300 ms; still missing: needy\./)
  })

  it('waitFor resolves when the check holds and rejects after its timeout', async () => {
    let n = 0
    await waitFor(() => ++n >= 3)
    expect(n).to.equal(3)
    const error = await waitFor(() => false, { timeout: 30, what: 'never' }).catch((e) => e)
    expect(error.message).to.equal('timed out after 30 ms waiting for never')
  })

  it('drives a task: a revising reviewer, then passes to approval and completion', async () => {
    const host = await boot({ plugins: [['supervisor', { automaticContinuation: false }]] })
    const session = await host.ctx.sessions.create({ cwd: await workspace() })
    await runCommand(host, session, '/task new write a greeting')
    scriptReviewer(host, { verdict: 'revise', findings: ['name the acceptance test'] })
    await runTool(host, session, 'task_submit_plan', { acceptanceCriteria: ['greets'], nodes: [{ id: 'a', title: 'greet' }] })
    await reviewsSettled(host, session)
    const revised = (await host.ctx.supervisor.state(session)).current!
    expect(revised).to.include({ phase: 'planning' })
    expect(revised.planFeedback).to.deep.equal(['name the acceptance test'])
    await runCommand(host, session, '/task clear')

    const plan = { acceptanceCriteria: ['totals'], nodes: [{ id: 'a', title: 'read' }, { id: 'b', title: 'sum', dependsOn: ['a'] }, { id: 'c', title: 'docs', dependsOn: [] }] }
    const approved = await driveToApproval(host, session, { objective: 'sum rows', plan })
    expect(approved.phase).to.equal('active')
    const done = await driveToCompletion(host, session)
    expect(done).to.include({ phase: 'complete', objective: 'sum rows' })
    expect(Object.values(done.nodeRuns).every((run) => run.status === 'passed')).to.equal(true)
  })

  it('runTool and runCommand throw coded errors; callTool returns them', async () => {
    const host = await boot({ plugins: [['supervisor', { automaticContinuation: false }]] })
    const session = await host.ctx.sessions.create({ cwd: await workspace() })
    const error = await runCommand(host, session, '/task approve').catch((e) => e)
    expect(error.code).to.be.a('string').and.not.equal('INTERNAL')
    const refused = await runTool(host, session, 'no_such_tool').catch((e) => e)
    expect(refused.code).to.equal('TOOL_NOT_FOUND')
    expect((await callTool(host, session, 'no_such_tool')).error?.code).to.equal('TOOL_NOT_FOUND')
  })

  it('proposeAndConfirm reopens a complete task; driveToCompletion finishes it again', async () => {
    const host = await boot({ plugins: [['supervisor', { automaticContinuation: false }], 'workspace', 'admission', 'repair'] })
    const { session } = await host.ctx.supervisor.startSession({ cwd: await workspace() })
    const plan = { acceptanceCriteria: ['ok'], nodes: [{ id: 'a', title: 'one' }, { id: 'b', title: 'two' }] }
    const first = await driveToCompletion(host, session, { plan })
    const { proposal, confirmation } = await proposeAndConfirm(host, session, { rootNodeIds: ['b'] })
    expect(proposal.taskId).to.equal(first.id)
    expect(confirmation.outcome).to.equal('reopened')
    expect((await host.ctx.supervisor.state(session)).current!.phase).to.equal('active')
    const again = await driveToCompletion(host, session)
    expect(again).to.include({ id: first.id, phase: 'complete', acceptanceCycle: 2 })
  })
})

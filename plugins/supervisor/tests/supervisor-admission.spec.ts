import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'
import {
  call, command, completedTask, ok, refused, reviewsSettled, supervisorOf, useSupervisedSession,
} from './fixtures'

describe('supervisor: tool admission', () => {
  let host: TestHost
  let cwd: string
  let session: Session
  useSupervisedSession((env) => ({ host, cwd, session } = env))

  it('lets every tool run while a task executes', async () => {
    await command(host, session, '/task new write things')
    await ok(host, session, 'write', { path: 'notes.md', content: 'planning notes\n' })
    expect(await readFile(join(cwd, 'notes.md'), 'utf8')).to.equal('planning notes\n')
  })

  it('after completion denies write with REPAIR_CONFIRMATION_REQUIRED and leaves the file unchanged', async () => {
    await completedTask(host, session)
    const before = await readFile(join(cwd, 'src/parser.ts'), 'utf8')
    const denied = await refused(host, session, 'write', { path: 'src/parser.ts', content: 'broken' }, 'REPAIR_CONFIRMATION_REQUIRED')
    expect(denied.message).to.match(/task_propose_repair/).and.to.match(/new task/)
    await refused(host, session, 'edit', { path: 'src/parser.ts', oldText: 'parse', newText: 'x' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await refused(host, session, 'shell', { command: 'rm -rf .' }, 'REPAIR_CONFIRMATION_REQUIRED')
    await refused(host, session, 'some_unknown_tool', {}, 'REPAIR_CONFIRMATION_REQUIRED')
    expect(await readFile(join(cwd, 'src/parser.ts'), 'utf8')).to.equal(before)

    expect(await ok(host, session, 'read', { path: 'src/parser.ts' })).to.include({ content: before })
    await ok(host, session, 'glob', { pattern: '**/*.ts' })
    await ok(host, session, 'grep', { pattern: 'parse' })
  })

  it('answers execution tools on a complete task with TASK_COMPLETED and cannot be bypassed by approve or resume', async () => {
    const task = await completedTask(host, session)
    for (const [name, args] of [['task_rework_node', { nodeId: 'a', reason: 'again' }], ['task_start_node', { nodeId: 'a' }],
      ['task_report_stage', { nodeId: 'a' }], ['task_request_completion', {}]] as const) {
      await refused(host, session, name, args, 'TASK_COMPLETED')
    }
    expect((await host.ctx.commands.input(session, '/task approve'))!.error!.code).to.equal('TASK_COMPLETED')
    expect((await host.ctx.commands.input(session, '/task resume'))!.error!.code).to.equal('TASK_COMPLETED')
    expect((await supervisorOf(host).state(session)).current).to.deep.equal(task)
  })

  it('task_status on a complete task lists the available actions and the blocked reason', async () => {
    await completedTask(host, session)
    const status = await ok(host, session, 'task_status')
    expect(status.availableActions).to.deep.equal(['task_propose_repair', 'await-web-confirmation'])
    expect(status.blockedReason).to.match(/complete/).and.to.match(/task_propose_repair/)
    expect(status.task).to.include({ phase: 'complete' })
  })

  it('keeps reviewer sessions read-only and leaves other sessions to their own rules', async () => {
    await command(host, session, '/task new review me')
    host.scripted.script('reviewer', [{ toolCalls: [{ name: 'write', args: { path: 'x.md', content: 'no' } }] }])
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await reviewsSettled(host, session)
    const [reviewer] = await host.ctx.sessions.list({ parentId: session.id })
    const events = await reviewer.read({ from: 0, limit: 100 })
    const result = events.find((e) => e.type === 'tool/result' && e.data.name === 'write')
    expect(result?.data.error.code).to.equal('FORBIDDEN')
    // The reviewer ended its turn without a verdict: the task pauses with a review fault.
    expect((await supervisorOf(host).state(session)).current).to.include({ phase: 'paused', pauseReason: 'review-fault' })
    expect((await supervisorOf(host).state(session)).reviews[0].status).to.equal('failed')
    // The file tools only as the host's read-only tools: a tool of such a name that is not read-only is refused.
    const decide = async (name: string, tool: unknown, args: Record<string, unknown> = {}) => {
      for (const guard of [...(host.ctx.tools as any).guards]) {
        const decision = await guard({ session: reviewer, agentId: reviewer.id, name, args, tool })
        if (decision && 'deny' in decision) return decision.deny.code
      }
    }
    expect(await decide('grep', { name: 'grep', readOnly: false })).to.equal('FORBIDDEN')
    expect(await decide('read', undefined)).to.equal('FORBIDDEN')
    expect(await decide('read', { name: 'read', readOnly: true })).to.equal(undefined)
    expect(await decide('review_read_log', { name: 'review_read_log', readOnly: true })).to.equal(undefined)
    // Only inside the workspace, whatever the tool accepts (DSH's read takes any absolute path).
    const readOnly = (name: string) => ({ name, readOnly: true })
    expect(await decide('read', readOnly('read'), { file_path: join(cwd, 'x.md') })).to.equal(undefined)
    expect(await decide('read', readOnly('read'), { file_path: '/etc/passwd' })).to.equal('PATH_OUTSIDE_WORKSPACE')
    expect(await decide('read', readOnly('read'), { path: '../outside.md' })).to.equal('PATH_OUTSIDE_WORKSPACE')
    expect(await decide('glob', readOnly('glob'), { pattern: 'src/**/*.ts' })).to.equal(undefined)
    expect(await decide('grep', readOnly('grep'), { pattern: 'x', path: '..' })).to.equal('PATH_OUTSIDE_WORKSPACE')
    // A grep's pattern is a regular expression, not a path.
    expect(await decide('grep', readOnly('grep'), { pattern: '/usr/bin' })).to.equal(undefined)
    // A path is resolved as the tool resolves it: wildcards in it are only characters, `..` climbs.
    expect(await decide('read', readOnly('read'), { file_path: '/*/../etc/passwd' })).to.equal('PATH_OUTSIDE_WORKSPACE')
    expect(await decide('read', readOnly('read'), { file_path: 'src/{x}/../../../../../../../../etc/passwd' })).to.equal('PATH_OUTSIDE_WORKSPACE')
    // Glob filters are matched under the search root (a leading / anchors them there); only `..` climbs out.
    expect(await decide('glob', readOnly('glob'), { pattern: '/src/**/*.ts' })).to.equal(undefined)
    expect(await decide('grep', readOnly('grep'), { pattern: 'x', include: '/src/*.ts' })).to.equal(undefined)
    expect(await decide('glob', readOnly('glob'), { pattern: 'src/../../**' })).to.equal('PATH_OUTSIDE_WORKSPACE')

    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    await ok(host, consultation, 'write', { path: 'consult.md', content: 'ok\n' })
  })

  it('refuses review tools outside a reviewer session', async () => {
    await command(host, session, '/task new x')
    await refused(host, session, 'review_verdict', { verdict: 'pass' }, 'FORBIDDEN')
    await refused(host, session, 'review_read_log', {}, 'FORBIDDEN')
  })

  it('keeps finished and cleared tasks readable and unique, and starts the next task in the same session', async () => {
    const first = await completedTask(host, session, 'first objective')
    await command(host, session, '/task new second objective')
    let state = await supervisorOf(host).state(session)
    expect(state.history).to.deep.equal([first])
    await command(host, session, '/task clear')
    const cleared = (await supervisorOf(host).state(session)).current!
    expect(cleared.phase).to.equal('cleared')
    // While cleared, implementation tools run again (no completed task to protect).
    await ok(host, session, 'write', { path: 'after-clear.md', content: 'x' })
    await command(host, session, '/task new third objective')
    state = await supervisorOf(host).state(session)
    expect(state.history.map((t) => [t.objective, t.phase])).to.deep.equal([['first objective', 'complete'], ['second objective', 'cleared']])
    expect(state.current!.objective).to.equal('third objective')
    expect(new Set([...state.history.map((t) => t.id), state.current!.id]).size).to.equal(3)
    expect(state.history[0].plan).to.deep.equal(first.plan)
    expect(state.reviews.filter((j) => j.taskId === first.id)).to.have.length(4)
    const status = await ok(host, session, 'task_status')
    expect(status.history.map((t: any) => t.id)).to.deep.equal(state.history.map((t) => t.id))
    expect((await call(host, session, 'write', { path: 'x.md', content: 'planning is free' })).error).to.equal(undefined)
  })

  it('bounds reviewer log pages and ignores a verdict that arrives after the task moved on', async () => {
    await command(host, session, '/task new stale reviews')
    // The reviewer's first step reads the log; its verdict comes after the user cleared the task.
    let release!: () => void
    const gate = new Promise<void>((resolve) => release = resolve)
    host.scripted.script('reviewer', [
      { toolCalls: [{ name: 'review_read_log', args: { from: 0, limit: 500 } }] },
      async () => { await gate; return { toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass' } }] } },
    ])
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: [], nodes: [{ id: 'a', title: 'a' }] })
    await command(host, session, '/task clear')
    const before = await supervisorOf(host).state(session)
    release()
    await reviewsSettled(host, session)
    const after = await supervisorOf(host).state(session)
    expect(after.current).to.deep.equal(before.current)
    const [reviewer] = await host.ctx.sessions.list({ parentId: session.id })
    const results = (await reviewer.read({ from: 0, limit: 100 })).filter((e) => e.type === 'tool/result')
    expect(results[0].data.error?.code).to.equal('TOOL_INVALID_ARGS')
    expect(results[1].data.error?.code).to.equal('TASK_STALE')
    expect(after.reviews[0]).to.include({ status: 'failed' }).and.not.have.property('verdict')
  })
})

import { expect } from 'chai'
import {
  admitTool, COMPLETE_TASK_ALLOWED_TOOLS, EXECUTION_TOOLS, foldSupervisorEvents, initSupervisorState, startNode, taskStatusView,
} from '../src/task'
import { Driver } from './fixtures/task'

const fold = (driver: Driver) => foldSupervisorEvents(driver.log.events)

describe('tool admission and task status', () => {
  it('allows every tool while a task executes or when there is none', () => {
    const driver = new Driver()
    expect(admitTool(initSupervisorState(), 'write')).to.deep.equal({ allow: true })
    driver.start('T')
    for (const tool of ['write', 'edit', 'shell', 'task_start_node']) expect(admitTool(fold(driver), tool)).to.deep.equal({ allow: true })
  })

  it('on a complete task allows only status, repair proposals and read-only tools', () => {
    const driver = new Driver()
    driver.start('T')
    driver.complete()
    const state = fold(driver)
    for (const tool of COMPLETE_TASK_ALLOWED_TOOLS) expect(admitTool(state, tool)).to.deep.equal({ allow: true })
    for (const tool of ['write', 'edit', 'bash', 'some_unknown_tool', 'task_submit_plan', 'read_image']) {
      const decision = admitTool(state, tool)
      expect(decision).to.have.nested.property('deny.code', 'REPAIR_CONFIRMATION_REQUIRED')
      expect((decision as any).deny.message).to.match(/propose a repair with task_propose_repair and wait for the user to confirm it/i)
      expect((decision as any).deny.message).to.match(/new task/)
    }
    for (const tool of EXECUTION_TOOLS) expect(admitTool(state, tool)).to.have.nested.property('deny.code', 'TASK_COMPLETED')
  })

  it('keeps denying while a proposal is pending and after a decline', () => {
    const driver = new Driver()
    driver.start('T')
    driver.complete()
    const p1 = driver.propose('p1', ['b'])
    expect(admitTool(fold(driver), 'write')).to.have.nested.property('deny.code', 'REPAIR_CONFIRMATION_REQUIRED')
    driver.decline(p1)
    expect(admitTool(fold(driver), 'write')).to.have.nested.property('deny.code', 'REPAIR_CONFIRMATION_REQUIRED')
  })

  it('task_status on an executing task lists ready nodes and the next actions', () => {
    const driver = new Driver()
    driver.start('T')
    driver.step((t, at) => startNode(t, { nodeId: 'a' }, at))
    const view = taskStatusView(fold(driver))
    expect(view.task).to.include({ id: 'T', phase: 'active', acceptanceCycle: 1, enabled: true })
    expect(view.readyNodes).to.deep.equal(['e'])
    expect(view.nodes.find((n) => n.id === 'd')).to.deep.equal({ id: 'd', title: 'join', dependsOn: ['b', 'c'], attempt: 1, status: 'pending' })
    expect(view.availableActions).to.deep.equal(['task_start_node', 'task_report_stage', 'task_rework_node'])
    expect(view).not.to.have.property('blockedReason')
  })

  it('task_status on a complete task offers repair and explains the block', () => {
    const driver = new Driver()
    driver.start('T')
    driver.complete()
    let view = taskStatusView(fold(driver))
    expect(view.availableActions).to.deep.equal(['task_propose_repair', 'await-web-confirmation'])
    expect(view.readyNodes).to.deep.equal([])
    expect(view.blockedReason).to.match(/complete.*propose a repair/)
    driver.propose('p1', ['b'], { source: 'user' })
    view = taskStatusView(fold(driver))
    expect(view.blockedReason).to.match(/repair "repair p1" waits for the user's confirmation/)
    expect(view.proposals).to.deep.equal([{
      id: 'p1', taskId: 'T', taskRevision: driver.task!.revision, title: 'repair p1', status: 'pending', source: 'user',
      proposerSessionId: 'main', rootNodeIds: ['b'], affectedNodeIds: ['b', 'd'],
    }])
  })

  it('a poisoned projection blocks everything but inspection', () => {
    const driver = new Driver()
    driver.start('T')
    driver.log.record({ namespace: 'dsh-task-supervisor', schemaVersion: 10, kind: 'state', recordId: 'x', payload: { id: 'T' } })
    const state = fold(driver)
    expect(admitTool(state, 'read')).to.deep.equal({ allow: true })
    expect(admitTool(state, 'task_start_node')).to.have.nested.property('deny.code', 'SUPERVISOR_POISONED')
    const view = taskStatusView(state)
    expect(view.availableActions).to.deep.equal([])
    expect(view.poisoned!.message).to.match(/^Supervisor record at seq \d+: /)
    expect(view.blockedReason).to.match(/inspects the session log/)
  })
})

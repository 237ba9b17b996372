import { expect } from 'chai'
import { TaskwardError } from '../src/errors'
import {
  affectedNodes, descendants, effectiveDependencies, readyNodes, samePlan, topologicalOrder, validatePlan, type TaskPlan,
} from '../src/task'
import { DIAMOND } from './fixtures/task'

function invalidMessage(plan: TaskPlan): string {
  try {
    validatePlan(plan)
  } catch (error) {
    expect(TaskwardError.is(error, 'TASK_INVALID')).to.equal(true)
    return (error as Error).message
  }
  throw new Error('validatePlan accepted an invalid plan')
}

const plan = (nodes: TaskPlan['nodes']): TaskPlan => ({ acceptanceCriteria: [], nodes })

describe('task DAG', () => {
  it('accepts a valid plan', () => {
    expect(() => validatePlan(DIAMOND)).not.to.throw()
  })

  it('refuses an empty plan, duplicate ids, empty titles, unknown and self dependencies', () => {
    expect(invalidMessage(plan([]))).to.match(/no nodes/)
    expect(invalidMessage(plan([{ id: 'a', title: 'x' }, { id: 'a', title: 'y' }]))).to.match(/"a" appears more than once/)
    expect(invalidMessage(plan([{ id: 'a', title: '  ' }]))).to.match(/"a" has an empty title/)
    expect(invalidMessage(plan([{ id: 'a', title: 'x', dependsOn: ['zz'] }]))).to.match(/unknown node "zz"/)
    expect(invalidMessage(plan([{ id: 'a', title: 'x', dependsOn: ['a'] }]))).to.match(/depends on itself/)
    expect(invalidMessage(plan([{ id: '__proto__', title: 'x' }]))).to.match(/not valid/)
  })

  it('refuses a cycle and names it', () => {
    const message = invalidMessage(plan([
      { id: 'a', title: 'x', dependsOn: ['c'] },
      { id: 'b', title: 'y', dependsOn: ['a'] },
      { id: 'c', title: 'z', dependsOn: ['b'] },
    ]))
    expect(message).to.match(/cycle: a → c → b → a/)
  })

  it('detects a cycle closed through the implicit previous-node dependency', () => {
    // b depends implicitly on a; a explicitly on b.
    expect(invalidMessage(plan([{ id: 'a', title: 'x', dependsOn: ['b'] }, { id: 'b', title: 'y' }]))).to.match(/cycle/)
  })

  it('resolves implicit dependencies: previous node, explicit [] is a root', () => {
    const p = plan([{ id: 'a', title: 'x' }, { id: 'b', title: 'y' }, { id: 'c', title: 'z', dependsOn: [] }, { id: 'd', title: 'w' }])
    expect(effectiveDependencies(p, 'a')).to.deep.equal([])
    expect(effectiveDependencies(p, 'b')).to.deep.equal(['a'])
    expect(effectiveDependencies(p, 'c')).to.deep.equal([])
    expect(effectiveDependencies(p, 'd')).to.deep.equal(['c'])
    expect(descendants(p, 'a')).to.deep.equal(['b'])
  })

  it('computes descendants and affected nodes in plan order, shared descendants once', () => {
    expect(descendants(DIAMOND, 'a')).to.deep.equal(['b', 'c', 'd'])
    expect(affectedNodes(DIAMOND, ['c', 'b'])).to.deep.equal(['b', 'c', 'd'])
    expect(affectedNodes(DIAMOND, ['e'])).to.deep.equal(['e'])
    expect(affectedNodes(DIAMOND, ['d', 'e'])).to.deep.equal(['d', 'e'])
    expect(() => affectedNodes(DIAMOND, ['nope'])).to.throw(TaskwardError).with.property('code', 'TASK_INVALID')
  })

  it('follows dependencies that point forward in plan order', () => {
    const p = plan([{ id: 'x', title: 'x', dependsOn: ['y'] }, { id: 'y', title: 'y', dependsOn: [] }, { id: 'z', title: 'z', dependsOn: ['x'] }])
    expect(affectedNodes(p, ['y'])).to.deep.equal(['x', 'y', 'z'])
    expect(topologicalOrder(p)).to.deep.equal(['y', 'x', 'z'])
  })

  it('orders topologically with plan order breaking ties', () => {
    expect(topologicalOrder(DIAMOND)).to.deep.equal(['a', 'b', 'c', 'd', 'e'])
  })

  it('lists ready nodes: pending or needs-revision with all dependencies passed', () => {
    const runs = (s: Record<string, string>) => Object.fromEntries(Object.entries(s).map(([id, status]) => [id, { attempt: 1, status }])) as any
    expect(readyNodes({ plan: DIAMOND, nodeRuns: runs({ a: 'pending', b: 'pending', c: 'pending', d: 'pending', e: 'pending' }) }))
      .to.deep.equal(['a', 'e'])
    expect(readyNodes({ plan: DIAMOND, nodeRuns: runs({ a: 'passed', b: 'needs-revision', c: 'running', d: 'pending', e: 'passed' }) }))
      .to.deep.equal(['b'])
    expect(readyNodes({ plan: DIAMOND, nodeRuns: runs({ a: 'passed', b: 'passed', c: 'passed', d: 'pending', e: 'awaiting-user' }) }))
      .to.deep.equal(['d'])
    expect(readyNodes({ nodeRuns: {} })).to.deep.equal([])
  })
})

describe('samePlan (a fold validates a plan once per change)', () => {
  const copy = (): TaskPlan => JSON.parse(JSON.stringify(DIAMOND))
  it('is true for an equal copy', () => {
    expect(samePlan(DIAMOND, copy())).to.equal(true)
  })
  it('is false for any difference a plan can have', () => {
    const edits: ((plan: TaskPlan) => void)[] = [
      (p) => { p.acceptanceCriteria.push('more') },
      (p) => { p.acceptanceCriteria[0] = 'other' },
      (p) => { p.nodes[1].title = 'renamed' },
      (p) => { p.nodes[1].id = 'x' },
      (p) => { p.nodes[1].dependsOn = ['a', 'e'] },
      (p) => { p.nodes[1].dependsOn = ['d'] },
      (p) => { delete p.nodes[4].dependsOn },
      (p) => { p.nodes.reverse() },
      (p) => { p.nodes.pop() },
    ]
    for (const edit of edits) {
      const plan = copy()
      edit(plan)
      expect(samePlan(DIAMOND, plan), JSON.stringify(plan)).to.equal(false)
      expect(samePlan(plan, DIAMOND), JSON.stringify(plan)).to.equal(false)
    }
    expect(samePlan(DIAMOND, undefined)).to.equal(false)
  })
})

import { TaskwardError } from '../errors'
import { NODE_ID_PATTERN } from './schemas'
import type { Task, TaskPlan } from './types'

/*
 * The plan as a DAG. A node without `dependsOn` depends on the node before it (plans written as a
 * list stay a chain); `dependsOn: []` makes a root. All results follow plan order.
 */

function invalid(message: string, details?: Record<string, unknown>): TaskwardError {
  return new TaskwardError('TASK_INVALID', `${message} Fix the plan and submit it again.`, details)
}

/** The dependencies a node really has (resolving the implicit "previous node" rule). */
export function effectiveDependencies(plan: TaskPlan, nodeId: string): string[] {
  const index = plan.nodes.findIndex((node) => node.id === nodeId)
  if (index < 0) throw invalid(`The plan has no node "${nodeId}".`, { nodeId })
  const node = plan.nodes[index]
  if (node.dependsOn) return [...node.dependsOn]
  return index === 0 ? [] : [plan.nodes[index - 1].id]
}

/** Every node id with its effective dependencies, in plan order. */
export function dependencyMap(plan: TaskPlan): Map<string, string[]> {
  const map = new Map<string, string[]>()
  plan.nodes.forEach((node, index) => {
    map.set(node.id, node.dependsOn ? [...node.dependsOn] : index === 0 ? [] : [plan.nodes[index - 1].id])
  })
  return map
}

/**
 * Check that a plan is usable: at least one node, ids well-formed and unique, titles non-empty,
 * dependencies known, not self-referencing, no duplicates, and no cycle. Throws `TASK_INVALID` saying
 * what is wrong.
 */
export function validatePlan(plan: TaskPlan): void {
  if (!plan || !Array.isArray(plan.nodes) || plan.nodes.length === 0) {
    throw invalid('The plan has no nodes; a plan needs at least one node.')
  }
  if (!Array.isArray(plan.acceptanceCriteria)) throw invalid('The plan has no acceptanceCriteria list.')
  const seen = new Set<string>()
  for (const node of plan.nodes) {
    if (typeof node.id !== 'string' || !NODE_ID_PATTERN.test(node.id)) {
      throw invalid(`Node id ${JSON.stringify(node.id)} is not valid (letters, digits, ".", "_", ":", "-"; at most 64).`)
    }
    if (seen.has(node.id)) throw invalid(`Node id "${node.id}" appears more than once.`, { nodeId: node.id })
    seen.add(node.id)
    if (typeof node.title !== 'string' || node.title.trim() === '') {
      throw invalid(`Node "${node.id}" has an empty title.`, { nodeId: node.id })
    }
  }
  for (const node of plan.nodes) {
    if (!node.dependsOn) continue
    const deps = new Set<string>()
    for (const dep of node.dependsOn) {
      if (dep === node.id) throw invalid(`Node "${node.id}" depends on itself.`, { nodeId: node.id })
      if (!seen.has(dep)) throw invalid(`Node "${node.id}" depends on unknown node "${dep}".`, { nodeId: node.id, dependency: dep })
      if (deps.has(dep)) throw invalid(`Node "${node.id}" lists dependency "${dep}" twice.`, { nodeId: node.id })
      deps.add(dep)
    }
  }
  const cycle = findCycle(plan)
  if (cycle) throw invalid(`The plan has a dependency cycle: ${cycle.join(' → ')}.`, { cycle })
}

const sameStrings = (a: readonly string[] | undefined, b: readonly string[] | undefined) => {
  if (a === b) return true
  if (!a || !b || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Whether two canonical plans (as readers return them: `TaskPlan`'s fields only) are equal. A fold
 * calls it for every task snapshot, where a generic deep comparison costs more than validating.
 */
export function samePlan(a: TaskPlan | undefined, b: TaskPlan | undefined): boolean {
  if (a === b) return true
  if (!a || !b || a.nodes.length !== b.nodes.length || !sameStrings(a.acceptanceCriteria, b.acceptanceCriteria)) return false
  for (let i = 0; i < a.nodes.length; i++) {
    const x = a.nodes[i]
    const y = b.nodes[i]
    if (x.id !== y.id || x.title !== y.title || !sameStrings(x.dependsOn, y.dependsOn)) return false
  }
  return true
}

/** A dependency cycle as a closed path of node ids, or undefined. */
function findCycle(plan: TaskPlan): string[] | undefined {
  const deps = dependencyMap(plan)
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id]
    state.set(id, 'open')
    path.push(id)
    for (const dep of deps.get(id) ?? []) {
      const found = visit(dep)
      if (found) return found
    }
    path.pop()
    state.set(id, 'done')
  }
  for (const node of plan.nodes) {
    const found = visit(node.id)
    if (found) return found
  }
}

/** Nodes in an order where every node comes after its dependencies (stable: plan order breaks ties). */
export function topologicalOrder(plan: TaskPlan): string[] {
  validatePlan(plan)
  const deps = dependencyMap(plan)
  const done = new Set<string>()
  const order: string[] = []
  while (order.length < plan.nodes.length) {
    const next = plan.nodes.find((node) => !done.has(node.id) && deps.get(node.id)!.every((d) => done.has(d)))!
    done.add(next.id)
    order.push(next.id)
  }
  return order
}

/** Every node that depends on `nodeId` directly or transitively, in plan order, each once. */
export function descendants(plan: TaskPlan, nodeId: string): string[] {
  return affectedNodes(plan, [nodeId]).filter((id) => id !== nodeId)
}

/**
 * The impact of reworking `roots`: the roots and all their descendants, in plan order, each once
 * (a descendant shared by several roots appears once). Unknown roots throw `TASK_INVALID`.
 */
export function affectedNodes(plan: TaskPlan, roots: readonly string[]): string[] {
  const deps = dependencyMap(plan)
  for (const root of roots) {
    if (!deps.has(root)) throw invalid(`The plan has no node "${root}".`, { nodeId: root })
  }
  const affected = new Set(roots)
  // Plan order is not necessarily topological, so iterate to a fixed point.
  let grew = true
  while (grew) {
    grew = false
    for (const [id, nodeDeps] of deps) {
      if (!affected.has(id) && nodeDeps.some((d) => affected.has(d))) {
        affected.add(id)
        grew = true
      }
    }
  }
  return plan.nodes.map((node) => node.id).filter((id) => affected.has(id))
}

/** Nodes that may start now: pending or needs-revision, with every dependency passed. */
export function readyNodes(task: Pick<Task, 'plan' | 'nodeRuns'>): string[] {
  if (!task.plan) return []
  const deps = dependencyMap(task.plan)
  return task.plan.nodes.map((node) => node.id).filter((id) => {
    const run = task.nodeRuns[id]
    if (!run || (run.status !== 'pending' && run.status !== 'needs-revision')) return false
    return deps.get(id)!.every((dep) => task.nodeRuns[dep]?.status === 'passed')
  })
}

import { validatePlan } from './dag'
import type { Task } from './types'

/**
 * Invariants of one task snapshot, checked by the projection for every state record: a valid acyclic
 * plan; node runs either absent (not approved yet) or exactly one per plan node; executing and
 * complete tasks have runs; a reviewing task names its review, and a stage review names a plan node.
 * Throws an Error saying what is wrong (the projection prefixes the seq and poisons).
 * `planChecked`: the plan is deep-equal to one that passed `validatePlan` already (the task's previous
 * snapshot): a fold of thousands of revisions of one plan validates it once.
 */
export function checkTaskInvariants(task: Task, planChecked = false): void {
  const where = `task ${task.id} revision ${task.revision}`
  if (task.plan && !planChecked) {
    try {
      validatePlan(task.plan)
    } catch (error) {
      throw new Error(`${where} has an invalid plan: ${(error as Error).message}`)
    }
  }
  const runIds = Object.keys(task.nodeRuns)
  if (runIds.length) {
    if (!task.plan) throw new Error(`${where} has node runs but no plan`)
    const planIds = task.plan.nodes.map((n) => n.id)
    const runSet = new Set(runIds)
    if (runIds.length !== planIds.length || !planIds.every((id) => runSet.has(id))) {
      throw new Error(`${where} must have exactly one run per plan node (plan: ${planIds.join(', ')}; runs: ${runIds.join(', ')})`)
    }
  } else if (task.phase === 'active' || task.phase === 'complete') {
    throw new Error(`${where} is ${task.phase} without node runs`)
  }
  if (task.phase === 'reviewing' && !task.pendingReview) throw new Error(`${where} is reviewing without a pending review`)
  const pending = task.pendingReview
  if (pending?.kind === 'stage' && (!pending.nodeId || !task.nodeRuns[pending.nodeId])) {
    throw new Error(`${where} waits for a stage review of an unknown node`)
  }
  if (task.phase === 'paused' && task.resumePhase && task.pauseReason === undefined) {
    throw new Error(`${where} records where to resume but not why it paused`)
  }
}

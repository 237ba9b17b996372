import { sourceLabel } from '../repair/proposal'
import type { ProposalStatus } from '../repair/types'
import { dependencyMap, readyNodes } from './dag'
import type { SupervisorState } from './fold'
import { phaseAdvice } from './guards'
import { effectiveCycle, type NodeRunStatus, type PendingReview, type Task, type TaskPhase } from './types'

/** A task's identifying fields as views show them; `acceptanceCycle` is the effective one (absent = 1). */
export type TaskHeadline = Pick<Task, 'id' | 'revision' | 'objective' | 'phase' | 'pauseReason' | 'enabled' | 'completedAt' | 'reopenedFromProposalId'>
  & { acceptanceCycle: number }

/** What the `task_status` tool returns: a read-only view, computed purely from the projection. */
export interface TaskStatusView {
  task?: TaskHeadline & { repairs: number }
  nodes: { id: string, title: string, dependsOn: string[], attempt?: number, status?: NodeRunStatus }[]
  readyNodes: string[]
  pendingReview?: PendingReview
  proposals: {
    id: string
    taskId: string
    taskRevision: number
    title: string
    status: ProposalStatus
    source: ReturnType<typeof sourceLabel>
    proposerSessionId?: string
    rootNodeIds: string[]
    affectedNodeIds: string[]
  }[]
  history: { id: string, objective: string, phase: TaskPhase, revision: number, acceptanceCycle: number, completedAt?: number }[]
  /** What can move the task on (tool names, or `await-…` for steps that belong to someone else). */
  availableActions: string[]
  /** Why implementation is blocked, when it is. */
  blockedReason?: string
  poisoned?: { seq: number, message: string }
}

function actionsFor(task: Task | undefined): string[] {
  if (!task || task.phase === 'cleared') return ['await-new-task']
  if (!task.enabled) return ['await-supervision-on']
  switch (task.phase) {
    case 'planning': return ['task_submit_plan']
    case 'awaiting-approval': return ['await-user-approval']
    case 'reviewing': return ['await-review']
    case 'paused': return ['await-user-resume']
    case 'complete': return ['task_propose_repair', 'await-web-confirmation']
    case 'active': {
      const runs = Object.values(task.nodeRuns)
      const actions: string[] = []
      if (readyNodes(task).length) actions.push('task_start_node')
      if (runs.some((r) => r.status === 'running')) actions.push('task_report_stage')
      if (runs.some((r) => r.status !== 'pending')) actions.push('task_rework_node')
      if (runs.length && runs.every((r) => r.status === 'passed')) actions.push('task_request_completion')
      return actions
    }
  }
}

function blockedReasonOf(state: SupervisorState): string | undefined {
  if (state.poisoned) return `${state.poisoned.message}. Execution is blocked until a person inspects the session log.`
  const task = state.current
  if (!task) return undefined
  if (task.phase === 'complete') {
    const waiting = state.proposals.find((p) => p.proposal.taskId === task.id && (p.status === 'pending' || p.status === 'confirmed'))
    return waiting
      ? `Task ${task.id} is complete; repair "${waiting.proposal.title}" waits for the user's confirmation in the console.`
      : phaseAdvice(task)
  }
  if (task.phase !== 'active') return phaseAdvice(task)
  return undefined
}

export function taskStatusView(state: SupervisorState): TaskStatusView {
  const task = state.current
  const deps = task?.plan ? dependencyMap(task.plan) : new Map<string, string[]>()
  const view: TaskStatusView = {
    nodes: (task?.plan?.nodes ?? []).map((node) => {
      const run = task!.nodeRuns[node.id]
      return { id: node.id, title: node.title, dependsOn: deps.get(node.id) ?? [], ...(run ? { attempt: run.attempt, status: run.status } : {}) }
    }),
    readyNodes: task && task.phase === 'active' ? readyNodes(task) : [],
    proposals: state.proposals.map(({ proposal, status }) => ({
      id: proposal.id,
      taskId: proposal.taskId,
      taskRevision: proposal.taskRevision,
      title: proposal.title,
      status,
      source: sourceLabel(proposal.source),
      ...(proposal.proposerSessionId ? { proposerSessionId: proposal.proposerSessionId } : {}),
      rootNodeIds: [...proposal.rootNodeIds],
      affectedNodeIds: [...proposal.affectedNodeIds],
    })),
    history: state.history.map((t) => ({
      id: t.id, objective: t.objective, phase: t.phase, revision: t.revision, acceptanceCycle: effectiveCycle(t),
      ...(t.completedAt !== undefined ? { completedAt: t.completedAt } : {}),
    })),
    availableActions: state.poisoned ? [] : actionsFor(task),
  }
  if (task) {
    view.task = {
      id: task.id,
      revision: task.revision,
      objective: task.objective,
      phase: task.phase,
      ...(task.pauseReason ? { pauseReason: task.pauseReason } : {}),
      enabled: task.enabled,
      acceptanceCycle: effectiveCycle(task),
      ...(task.completedAt !== undefined ? { completedAt: task.completedAt } : {}),
      ...(task.reopenedFromProposalId ? { reopenedFromProposalId: task.reopenedFromProposalId } : {}),
      repairs: task.repairHistory?.length ?? 0,
    }
    if (task.pendingReview) view.pendingReview = { ...task.pendingReview }
  }
  const blocked = blockedReasonOf(state)
  if (blocked) view.blockedReason = blocked
  if (state.poisoned) view.poisoned = { ...state.poisoned }
  return view
}

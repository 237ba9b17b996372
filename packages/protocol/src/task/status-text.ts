import type { TaskStatusView } from './status'
import type { NodeRunStatus, PauseReason, TaskPhase } from './types'

/*
 * `/task status` as text: phase, nodes with their status, what happens next and what waits for the
 * user — derived once from the status view, so our host's reply (its `text`) and DSH's (the text it
 * shows; `/task status --json` gives the view) always say the same. Pure.
 */

/** A phase in words. */
export const PHASE_WORDS: Record<TaskPhase, string> = {
  planning: 'planning — the agent writes the plan',
  'awaiting-approval': 'awaiting approval — the plan passed its review',
  active: 'active — the agent works through the plan',
  reviewing: 'reviewing',
  paused: 'paused',
  complete: 'complete',
  cleared: 'cleared',
}

/** Why a task is paused, in words. */
export const PAUSE_REASON_WORDS: Record<PauseReason, string> = {
  user: 'paused by the user',
  decision: 'a reviewer asked for your decision',
  'review-fault': 'a review failed',
  restart: 'the host restarted',
  recovery: 'the recovery controller stopped execution',
  budget: 'a budget is used up',
  'model-context': 'the turn\'s input does not fit the model\'s context',
  loop: 'the agent repeated the same tool call with the same result',
}

/** A node run's status in words. */
export const NODE_STATUS_WORDS: Record<NodeRunStatus, string> = {
  pending: 'pending',
  running: 'running',
  reviewing: 'in review',
  passed: 'passed',
  'needs-revision': 'needs revision',
  'awaiting-user': 'awaiting your decision',
}

/** What `/task status` knows beyond the view: the controller, and a repair proposal waiting for the user. */
export interface StatusTextInput extends TaskStatusView {
  controller?: { armed: boolean, awaitingManualResume: boolean, continuationsLeft?: number }
  awaitingDecision?: { id: string, title: string, link?: string }
}

const list = (items: string[]) => items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`

/** What happens next without the user (absent when nothing does). */
function nextStep(view: StatusTextInput): string | undefined {
  const task = view.task
  if (!task || view.poisoned || !task.enabled) return
  const running = view.nodes.filter((n) => n.status === 'running').map((n) => n.id)
  switch (task.phase) {
    case 'complete': return 'nothing: the task is complete (only a repair you confirm reopens it).'
    case 'planning': return 'the agent plans the task and submits the plan for review (task_submit_plan).'
    case 'reviewing': {
      const review = view.pendingReview
      const what = review ? `the ${review.kind} review${review.nodeId ? ` of node ${review.nodeId}` : ''}` : 'a review'
      return `${what} runs; the task goes on after its verdict.`
    }
    case 'active': {
      if (view.controller?.awaitingManualResume) return
      if (running.length) return `the agent finishes node ${list(running)} and reports it for review (task_report_stage).`
      if (view.readyNodes.length) return `the agent starts node ${list(view.readyNodes)} (task_start_node).`
      if (view.availableActions.includes('task_request_completion')) return 'the agent requests the completion review (task_request_completion).'
      return 'nodes wait for their reviews.'
    }
  }
}

/** What waits for the user (absent when nothing does). */
function userStep(view: StatusTextInput): string | undefined {
  const task = view.task
  if (view.poisoned) return 'a person must inspect the session log; execution is blocked until then.'
  if (!task || task.phase === 'cleared') return 'start a task with /task new <objective>.'
  if (view.awaitingDecision) {
    const where = view.awaitingDecision.link ? ` at ${view.awaitingDecision.link} (/task console answers a login link)` : ' in the console'
    return `the repair proposal "${view.awaitingDecision.title}" waits for your decision: confirm or decline it${where}.`
  }
  if (!task.enabled) return 'supervision is off; /task on turns it back on.'
  switch (task.phase) {
    case 'awaiting-approval': return 'approve the plan with /task approve (or change the objective with /task edit <objective>).'
    case 'paused': return task.pauseReason === 'budget'
      ? 'raise the budget that is used up, then /task resume (the refusal names the budget and its setting).'
      : task.pauseReason === 'decision' ? 'read the reviewer\'s findings, then /task resume (or /task edit, /task clear).'
        : '/task resume continues it.'
    case 'complete': return undefined
    default:
      if (view.controller?.awaitingManualResume) return '/task resume continues it (nothing runs by itself after a restart).'
  }
}

function nodeLine(node: TaskStatusView['nodes'][number]): string {
  const status = node.status ? NODE_STATUS_WORDS[node.status] ?? node.status : 'not started'
  const attempt = node.attempt && node.attempt > 1 ? `, attempt ${node.attempt}` : ''
  const after = node.dependsOn.length ? ` (after ${node.dependsOn.join(', ')})` : ''
  return `  ${node.id}: ${node.title}${after} — ${status}${attempt}`
}

/** `/task status` in words, from the same view the JSON reply carries. */
export function taskStatusText(view: StatusTextInput): string {
  const task = view.task
  const lines: string[] = []
  if (!task) {
    lines.push('No task in this session.')
  } else {
    const cycle = task.acceptanceCycle > 1 ? `, acceptance cycle ${task.acceptanceCycle}` : ''
    lines.push(`Task ${task.id} (revision ${task.revision}${cycle}): ${task.objective}`)
    let phase = PHASE_WORDS[task.phase] ?? task.phase
    if (task.phase === 'reviewing' && view.pendingReview) {
      phase += ` — the ${view.pendingReview.kind} review${view.pendingReview.nodeId ? ` of node ${view.pendingReview.nodeId}` : ''} runs`
    }
    if (task.phase === 'paused' && task.pauseReason) phase += ` — ${PAUSE_REASON_WORDS[task.pauseReason] ?? task.pauseReason}`
    if (task.phase === 'complete' && task.repairs) phase += ` (after ${task.repairs} confirmed repair${task.repairs > 1 ? 's' : ''})`
    lines.push(`Phase: ${phase}${task.enabled ? '' : ' (supervision off)'}`)
    if (view.nodes.length) lines.push('Nodes:', ...view.nodes.map(nodeLine))
    else if (task.phase !== 'planning') lines.push('Nodes: none yet.')
  }
  if (view.poisoned) lines.push(`Blocked: ${view.blockedReason ?? view.poisoned.message}`)
  const next = nextStep(view)
  lines.push(`Next: ${next ?? 'nothing runs until you act.'}`)
  const user = userStep(view)
  if (user) lines.push(`Waiting for you: ${user}`)
  const open = view.proposals.filter((p) => p.status === 'pending' || p.status === 'confirmed')
  if (open.length && !view.awaitingDecision) lines.push(`Repair proposals: ${open.map((p) => `"${p.title}" (${p.status})`).join(', ')}.`)
  if (view.history.length) {
    const last = view.history.at(-1)!
    lines.push(`Earlier tasks: ${view.history.length} (latest: ${last.objective} — ${last.phase}).`)
  }
  lines.push('The whole status as JSON: /task status --json')
  return lines.join('\n')
}

import { REPAIR_KINDS, REPAIR_NAMESPACE, TASK_NAMESPACE, TASK_STATE_KIND } from '../record-names'
import { PAUSE_REASON_WORDS } from '../task/status-text'
import type { NodeRunStatus, PauseReason, TaskPhase } from '../task/types'

/*
 * The milestones a conversation marks with a compact card (the DSH panel's cards): the plan waiting
 * for approval, a node passed or sent back, completion, a pause with its reason, a repair proposed, the
 * task reopened. Derived from two consecutive task states (or a repair proposal record), pure and
 * defensive: the input is a record as read from a log, so every field is checked before it is used,
 * and nothing here authorises anything (cards are display; the panel's view is the authority).
 */

export type MilestoneKind = 'plan-waiting' | 'node-passed' | 'node-sent-back' | 'complete' | 'paused' | 'reopened' | 'repair-proposed'

export interface Milestone {
  kind: MilestoneKind
  text: string
}

/** The task-state fields milestones read (a record's payload is checked against this shape). */
export interface MilestoneTask {
  id: string
  phase: TaskPhase
  pauseReason?: PauseReason
  acceptanceCycle?: number
  reopenedFromProposalId?: string
  plan?: { nodes: { id: string }[] }
  nodeRuns: Record<string, { status: NodeRunStatus, attempt?: number, review?: { findings?: string[] } }>
}

const isObject = (value: unknown): value is Record<string, any> => !!value && typeof value === 'object' && !Array.isArray(value)

/** A record envelope's task state, when it is one (else undefined). */
export function milestoneTaskOf(envelope: unknown): MilestoneTask | undefined {
  if (!isObject(envelope) || envelope.namespace !== TASK_NAMESPACE || envelope.kind !== TASK_STATE_KIND) return
  const task = envelope.payload
  if (!isObject(task) || typeof task.id !== 'string' || typeof task.phase !== 'string') return
  return { ...task, nodeRuns: isObject(task.nodeRuns) ? task.nodeRuns : {} } as MilestoneTask
}

const clip = (text: string, max = 160) => text.length > max ? `${text.slice(0, max - 1)}…` : text

/** What changed between two consecutive states of one task (none for a different task or no change worth a card). */
export function taskMilestones(previous: MilestoneTask | undefined, next: MilestoneTask): Milestone[] {
  const before = previous?.id === next.id ? previous : undefined
  const out: Milestone[] = []
  const cycle = typeof next.acceptanceCycle === 'number' ? next.acceptanceCycle : 1
  if (before?.phase === 'complete' && next.phase !== 'complete' && next.phase !== 'cleared' && next.reopenedFromProposalId) {
    out.push({ kind: 'reopened', text: `Task reopened for acceptance cycle ${cycle} by a confirmed repair.` })
  }
  for (const [id, run] of Object.entries(next.nodeRuns)) {
    if (!isObject(run)) continue
    const was = isObject(before?.nodeRuns[id]) ? before!.nodeRuns[id]!.status : undefined
    if (run.status === 'passed' && was !== 'passed') out.push({ kind: 'node-passed', text: `Node ${id} passed its review.` })
    if (run.status === 'needs-revision' && was !== 'needs-revision' && was !== undefined) {
      const findings = Array.isArray(run.review?.findings) ? run.review!.findings!.filter((f) => typeof f === 'string') : []
      out.push({ kind: 'node-sent-back', text: clip(`Node ${id} sent back for revision${findings.length ? `: ${findings.join('; ')}` : '.'}`) })
    }
  }
  if (next.phase !== before?.phase) {
    const nodes = Array.isArray(next.plan?.nodes) ? next.plan!.nodes.length : 0
    if (next.phase === 'awaiting-approval') out.push({ kind: 'plan-waiting', text: `The plan (${nodes} node${nodes === 1 ? '' : 's'}) waits for your approval.` })
    if (next.phase === 'complete') out.push({ kind: 'complete', text: `Task complete${cycle > 1 ? ` (acceptance cycle ${cycle})` : ''}.` })
    if (next.phase === 'paused') out.push({ kind: 'paused', text: `Task paused: ${(next.pauseReason && PAUSE_REASON_WORDS[next.pauseReason]) || 'no reason recorded'}.` })
  }
  return out
}

/** A repair proposal record as a milestone (else undefined). */
export function repairMilestone(envelope: unknown): Milestone | undefined {
  if (!isObject(envelope) || envelope.namespace !== REPAIR_NAMESPACE || envelope.kind !== REPAIR_KINDS.proposal || !isObject(envelope.payload)) return
  const title = typeof envelope.payload.title === 'string' ? envelope.payload.title : 'untitled'
  return { kind: 'repair-proposed', text: clip(`Repair proposed: "${title}" — confirm or decline it in the Task view.`) }
}

import { createElement as h } from 'react'
import { milestoneTaskOf, repairMilestone, taskMilestones, type Milestone, type MilestoneTask } from '@taskward/protocol/milestones'
import { carrierOf } from '../src/carrier-read'

/*
 * Milestone cards in the conversation: each Taskward record DSH's log carries (carrier-read.ts) that
 * marks a milestone — derived by @taskward/protocol's taskMilestones from the task's previous and new
 * state — becomes one compact card at its place in the chat. Display only: a card grants nothing, and
 * the Task view's (server-derived) state is the authority.
 */

export const CARD_KIND = 'taskward-milestone'

export interface CardState {
  /** The task state this record carried (the next record's "previous"). */
  task?: MilestoneTask
  milestones: Milestone[]
  seq: number
}

/** The record a DSH event carries, when it is a Taskward `extension/record` (else undefined). */
export function carriedRecord(event: { type: string, data?: any }): unknown {
  const carried = carrierOf(event as any)
  return carried?.type === 'extension/record' ? carried.data : undefined
}

/** A card's state from its record and the previous card context's state (the same task's last state). */
export function cardState(record: unknown, previous: CardState | undefined, seq: number): CardState {
  const task = milestoneTaskOf(record)
  if (task) return { task, milestones: taskMilestones(previous?.task, task), seq }
  const repair = repairMilestone(record)
  return { ...(previous?.task ? { task: previous.task } : {}), milestones: repair ? [repair] : [], seq }
}

export function MilestoneCard({ node }: { node: { data: { milestones: Milestone[] } } }) {
  const milestones = node.data.milestones
  return h('div', { className: 'tw-card', role: 'note', 'aria-label': 'Taskward', 'data-milestones': milestones.map((m) => m.kind).join(' ') },
    milestones.map((m, i) => h('p', { key: i, 'data-kind': m.kind, style: { margin: 0 } }, h('strong', null, 'Taskward: '), m.text)))
}

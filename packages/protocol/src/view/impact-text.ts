import type { StampParts } from '../workspace/stamp'

/*
 * The impact panel's and the repair outcome's words, in one place for every renderer (the console's
 * page, the DSH panel): the workspace stamp line, the note on what confirming does (and what the stamp
 * does not prove), and what a repair click did. The view carries the first two per proposal
 * (session-view.ts); the repair route answers the third as `message`. Pure.
 */

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`

/** "12 files, 3.4 KiB, 1 link; dependencies: 900 files, 2.0 MiB" — the project's own files apart from its dependency directories. */
export function stampText({ own, dependencies }: StampParts): string {
  const counts = (c: { files: number, bytes: number, links: number }) =>
    `${plural(c.files, 'file')}, ${formatBytes(c.bytes)}${c.links ? `, ${plural(c.links, 'link')}` : ''}`
  return counts(own) + (dependencies ? `; dependencies: ${counts(dependencies)}` : '')
}

/** What the stamp is for, and what it is not. */
export const STAMP_CAVEAT = 'The workspace stamp binds your click to the files as they were when the repair was proposed; '
  + 'it does not prove that the earlier implementation is correct.'

/** What confirming a proposal does, for the task in its acceptance cycle `cycle` (the next one is `cycle + 1`). */
export function impactNote(taskId: string, cycle: number): string {
  return `Confirming reopens task ${taskId} for acceptance cycle ${cycle + 1}: the affected nodes get a new attempt and need a new review; `
    + `the other nodes keep their acceptance and final acceptance must be requested again. ${STAMP_CAVEAT}`
}

/** The repair route's answer to a confirm, decline or propose (its `outcome` and facts). */
export interface RepairOutcomeFacts {
  outcome: string
  taskId?: string
  revision?: number
  acceptanceCycle?: number
  affectedNodeIds?: readonly string[]
}

/** What a repair click did, in words (the route's `message`). */
export function repairOutcomeText(facts: RepairOutcomeFacts): string {
  switch (facts.outcome) {
    case 'reopened':
      return `Reopened: task ${facts.taskId} is in acceptance cycle ${facts.acceptanceCycle} (revision ${facts.revision}). `
        + `Affected nodes ${(facts.affectedNodeIds ?? []).join(', ')} wait for a new attempt; the agent continues.`
    case 'already-applied':
      return `This repair was already applied: task ${facts.taskId} is in acceptance cycle ${facts.acceptanceCycle}. Nothing more happened.`
    case 'declined':
    case 'already-declined':
      return 'Declined: the task stays complete. The agent still cannot change files without a confirmed repair.'
    case 'proposed':
      return 'Proposed: the repair waits for a decision in the impact panel.'
    case 'identical-pending':
      return 'The same repair is already waiting for a decision; nothing new was recorded.'
    default:
      return `Done (${facts.outcome}).`
  }
}

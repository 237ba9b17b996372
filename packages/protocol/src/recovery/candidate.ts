import { createHash } from 'node:crypto'
import { RECORD_EVENT_TYPE } from '../envelope'
import type { SessionEvent } from '../events'
import { TASK_NAMESPACE, TASK_STATE_KIND } from '../task/schemas'
import type { CandidateRef } from './records'
import type { RecoveryState } from './state'

/**
 * The candidate of a git working tree as the checks see it. A clean tree (nothing in `git status
 * --porcelain --untracked-files=all`) is its commit: `digest` = HEAD. A dirty tree is HEAD plus the
 * workspace stamp digest of the tree: `digest` = sha256 over both (so it never equals a commit id nor
 * the clean HEAD), with `head` and `tree` kept for ancestry checks and for people reading the record.
 */
export function gitCandidate(head: string, dirtyTree?: string): CandidateRef {
  if (dirtyTree === undefined) return { digest: head, source: 'git' }
  const digest = createHash('sha256').update(`taskward-git-worktree\0${head}\0${dirtyTree}`).digest('hex')
  return { digest, source: 'git', head, tree: dirtyTree }
}

/** The commit a git candidate sits on (its HEAD); undefined for a workspace candidate. */
export function candidateCommit(candidate: CandidateRef): string | undefined {
  if (candidate.source !== 'git') return undefined
  return candidate.head ?? candidate.digest
}

/** The recorded candidate whose digest is `digest` (the latest attempt that names it), if any. */
export function recordedCandidate(state: RecoveryState, digest: string): CandidateRef | undefined {
  let found: CandidateRef | undefined
  for (const task of Object.values(state.tasks)) {
    for (const attempt of task.attempts) if (attempt.candidate.digest === digest) found = attempt.candidate
  }
  return found
}

/** The task id of a supervisor task-state record (a task's snapshot), or undefined for other events. */
export function taskOfStateRecord(event: SessionEvent): string | undefined {
  if (event.type !== RECORD_EVENT_TYPE) return undefined
  const data = event.data as { namespace?: string, kind?: string, payload?: { id?: unknown } } | undefined
  if (data?.namespace !== TASK_NAMESPACE || data.kind !== TASK_STATE_KIND) return undefined
  return typeof data.payload?.id === 'string' ? data.payload.id : undefined
}

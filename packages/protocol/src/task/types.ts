/**
 * Today's (schema 11) shape of a supervised task. A task is a value: every transition returns a new
 * task with `revision + 1`, and the controller persists the whole snapshot as a `state` record.
 * Optional fields are absent (never `undefined`, never invented) when they do not apply or when an
 * older record did not know them.
 */

export const TASK_PHASES = ['planning', 'awaiting-approval', 'active', 'reviewing', 'paused', 'complete', 'cleared'] as const
export type TaskPhase = typeof TASK_PHASES[number]

/** Phases a task can be paused from and return to on resume. */
export const RESUMABLE_PHASES = ['planning', 'awaiting-approval', 'active', 'reviewing'] as const
export type ResumablePhase = typeof RESUMABLE_PHASES[number]

/** Phases after which a task never changes again (except a confirmed repair of a complete task). */
export const TERMINAL_PHASES: readonly TaskPhase[] = ['complete', 'cleared']

/**
 * Why a task is paused: `user` (/task pause), `decision` (a reviewer asked for the user), `review-fault`
 * (a reviewer failed), `restart` (host restarted; waits for /task resume), `recovery` (the recovery
 * controller stopped execution), `budget` (a budget is used up: the recovery controller's attempts or
 * steps, or the token budget; resuming is refused until it is raised). Records before schema 11 have
 * no `budget`: a budget stop there was paused as `recovery` or `user`, and is read as written.
 */
export const PAUSE_REASONS = ['user', 'decision', 'review-fault', 'restart', 'recovery', 'budget', 'model-context', 'loop'] as const
export type PauseReason = typeof PAUSE_REASONS[number]

export const NODE_RUN_STATUSES = ['pending', 'running', 'reviewing', 'passed', 'needs-revision', 'awaiting-user'] as const
export type NodeRunStatus = typeof NODE_RUN_STATUSES[number]

export const REVIEW_KINDS = ['plan', 'stage', 'completion', 'progress'] as const
export type ReviewKind = typeof REVIEW_KINDS[number]

export const REVIEW_VERDICTS = ['pass', 'revise', 'needs-user'] as const
export type ReviewVerdict = typeof REVIEW_VERDICTS[number]

/** One step of the plan. Without `dependsOn` a node depends on the previous node; `[]` makes it a root. */
export interface PlanNode {
  id: string
  title: string
  dependsOn?: string[]
}

export interface TaskPlan {
  acceptanceCriteria: string[]
  nodes: PlanNode[]
}

/** The verdict of a reviewer job, as applied to a task. */
export interface ReviewOutcome {
  jobId: string
  verdict: ReviewVerdict
  findings: string[]
}

/** The acceptance an attempt replaced: which attempt had passed and which review passed it. */
export interface PriorAcceptance {
  attempt: number
  jobId?: string
}

/** The execution record of one plan node in the current acceptance cycle. */
export interface NodeRun {
  /** 1 for the first attempt; +1 on every rework or repair. */
  attempt: number
  status: NodeRunStatus
  /** Evidence for this attempt must come after this seq (older evidence belongs to earlier attempts). */
  evidenceAfterSeq?: number
  /** The latest stage review of this attempt. */
  review?: ReviewOutcome
  /** Why this attempt exists (set by rework). */
  reworkReason?: string
  /** The acceptance this attempt replaces, when a passed node was reworked. */
  priorAcceptance?: PriorAcceptance
}

/** The review the controller is waiting for. Only a result naming `jobId` may be applied. */
export interface PendingReview {
  kind: ReviewKind
  jobId: string
  /** The node under review (stage reviews). */
  nodeId?: string
  /** The task revision whose state the reviewer evaluates. */
  forRevision: number
}

/** The latest final-acceptance review. Records before schema 8 lack `evidenceSeqs` and `cutoffSeq`. */
export interface CompletionReview extends ReviewOutcome {
  evidenceSeqs?: number[]
  cutoffSeq?: number
}

/** What a confirmed repair replaced, kept so that earlier acceptance stays inspectable. */
export interface RepairHistoryEntry {
  proposalId: string
  title: string
  reason: string
  rootNodeIds: string[]
  affectedNodeIds: string[]
  /** The acceptance cycle that the repair ended (1 when the task had no explicit cycle). */
  previousCycle: number
  previousRuns: Record<string, NodeRun>
  previousCompletionReview?: CompletionReview
  /** When the task had completed, only when that was recorded (older records lack it). */
  completedAt?: number
  confirmedAt: number
  confirmationSeq: number
}

export interface Task {
  id: string
  /** 1 for a new task; +1 per transition, contiguous. */
  revision: number
  objective: string
  phase: TaskPhase
  /** Present while paused (records before schema 7 may lack it). */
  pauseReason?: PauseReason
  /** The phase `resume` returns to (records before schema 7 lack it; see `resumeTarget`). */
  resumePhase?: ResumablePhase
  /** Supervision on or off (/task on|off). */
  enabled: boolean
  plan?: TaskPlan
  /** The reviewer's omissions after a plan `revise` (or `needs-user`). */
  planFeedback?: string[]
  /** One run per plan node once the plan is approved; empty before. */
  nodeRuns: Record<string, NodeRun>
  pendingReview?: PendingReview
  completionReview?: CompletionReview
  /** Absent means the implicit first cycle; a confirmed repair makes it 2, 3, … */
  acceptanceCycle?: number
  /** Time of the accepted completion of this cycle. */
  completedAt?: number
  /** The repair proposal whose confirmation reopened this cycle. */
  reopenedFromProposalId?: string
  repairHistory?: RepairHistoryEntry[]
}

/**
 * Where and when a transition happens: `seq` of the session event that caused it (a command's
 * `user/message`, a `tool/call`, a receipt), its `time` in ms, and `id` for transitions that create
 * something (the new task's id). Transitions read no clock and generate no ids themselves.
 */
export interface TransitionAt {
  seq: number
  time: number
  id?: string
}

/** Binding of a caller (tool call, reviewer callback, console click) to the task it saw. */
export interface TaskBinding {
  taskId: string
  revision: number
}

export function isTerminal(task: Pick<Task, 'phase'>): boolean {
  return TERMINAL_PHASES.includes(task.phase)
}

/** The acceptance cycle a task is in (absent = implicit first cycle). */
export function effectiveCycle(task: Pick<Task, 'acceptanceCycle'>): number {
  return task.acceptanceCycle ?? 1
}

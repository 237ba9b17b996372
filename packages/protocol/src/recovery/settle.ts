import Schema from 'schemastery'
import { TaskwardError } from '../errors'

/**
 * How a background verification (a stage report's checks) waits out a workspace that moved under
 * its copies — the agent writing on while the stage is verified. Instead of losing the race and
 * dropping the verification, it waits until the workspace reads the same twice `quietMs` apart (the
 * writes stopped), then verifies again; the waits grow (doubling up to `maxWaitMs`), and it gives up,
 * coded, after `maxRounds` lost verifications or `deadlineMs` in all.
 */
export interface SettlePolicy {
  /** The workspace is settled when two readings this far apart agree. */
  quietMs: number
  /** The longest single wait between two readings. */
  maxWaitMs: number
  /** Verification rounds that may lose the race before it gives up. */
  maxRounds: number
  /** Time from the first lost round after which it gives up. */
  deadlineMs: number
}

export const SettlePolicySchema: Schema<Partial<SettlePolicy>, SettlePolicy> = Schema.object({
  quietMs: Schema.natural().min(10).default(500)
    .description('A background verification that lost the race with a write waits until two readings of the workspace this far apart (ms) agree.'),
  maxWaitMs: Schema.natural().min(10).default(8000)
    .description('The longest wait (ms) between two readings: the wait doubles while the workspace keeps changing.'),
  maxRounds: Schema.natural().min(1).default(5)
    .description('Verifications that may lose the race before the background verification gives up (recorded, ARTIFACT_CHANGED).'),
  deadlineMs: Schema.natural().min(100).default(120_000)
    .description('Time (ms) after the first lost round when the background verification gives up (recorded, ARTIFACT_CHANGED).'),
}) as Schema<Partial<SettlePolicy>, SettlePolicy>

/** Where a background verification stands after it lost a round to a write. */
export interface SettleProgress {
  /** Verification rounds lost so far (at least 1 once asked). */
  lostRounds: number
  /** Waits made since the last lost round. */
  waits: number
  /** Time since the first lost round. */
  elapsedMs: number
  /** Whether the last wait's two readings agreed; undefined before the first wait after a lost round. */
  quiet?: boolean
}

/** Verify again now, wait `ms` and read the workspace again, or give up with `error`. */
export type SettleStep =
  | { kind: 'verify' }
  | { kind: 'wait', ms: number }
  | { kind: 'give-up', error: TaskwardError }

/** The next step of a background verification that lost a round (pure: the caller reads and waits). */
export function nextSettleStep(policy: SettlePolicy, progress: SettleProgress, where: { workspace: string, taskId: string }): SettleStep {
  const giveUp = (why: string) => ({
    kind: 'give-up' as const,
    error: new TaskwardError('ARTIFACT_CHANGED',
      `The workspace ${where.workspace} kept changing while task ${where.taskId}'s stage was verified in the background (${why}), so this stage `
      + 'was not verified; the next stage report or the completion request verifies the workspace as it is then. '
      + 'If something keeps writing there (a watcher, a process left running), stop it.',
      { reason: 'workspace-unsettled', taskId: where.taskId, lostRounds: progress.lostRounds, elapsedMs: progress.elapsedMs }),
  })
  if (progress.lostRounds >= policy.maxRounds) return giveUp(`${progress.lostRounds} verifications in a row lost the race with a write`)
  // The deadline bounds the work too: past it a quiet reading starts no new round (each one runs every check).
  if (progress.elapsedMs >= policy.deadlineMs) return giveUp(`it did not settle within ${Math.round(policy.deadlineMs / 1000)} s`)
  if (progress.quiet) return { kind: 'verify' }
  const ms = Math.min(policy.maxWaitMs, policy.quietMs * 2 ** progress.waits, Math.max(1, policy.deadlineMs - progress.elapsedMs))
  return { kind: 'wait', ms }
}

/**
 * Whether a verification failed because the workspace moved while it was read or copied — the race
 * a background verification waits out: every `ARTIFACT_CHANGED` (a copy that is not the candidate,
 * `candidate-moved`; a file that changed while the stamp read it, `modified-during-read` and the like).
 */
export function lostToWrite(error: unknown): boolean {
  return TaskwardError.is(error, 'ARTIFACT_CHANGED')
}

/**
 * Phases in which a stage verification is still wanted. `reviewing` is one: a stage report puts the
 * task there until its stage review answers, which takes a real reviewer seconds. (A completion review
 * needs no exception: the completion request records its own attempt first, which supersedes this one.)
 */
const STILL_EXECUTING: ReadonlySet<string> = new Set(['active', 'reviewing'])

/** Why a stage verification that lost a round is no longer needed. */
export type StageSupersededReason = 'task-ended' | 'newer-attempt'

/**
 * Whether a stage verification that lost a round is no longer needed: the task is not the current
 * one or not executing any more (`task-ended`), or an attempt was recorded for it since
 * (`newer-attempt`: that one verified newer files than the stage's). Then it stops without verifying
 * again or recording a give-up; undefined while it is still needed.
 */
export function stageVerificationSuperseded(current: { id: string, phase: string } | undefined, taskId: string, attempts: { before: number, now: number }): StageSupersededReason | undefined {
  if (current?.id !== taskId || !STILL_EXECUTING.has(current.phase)) return 'task-ended'
  return attempts.now > attempts.before ? 'newer-attempt' : undefined
}

import type { Budgets } from '../recovery/budgets'
import type { CheckSpec } from '../recovery/checks'
import type { TaskRecovery } from '../recovery/state'
import type { AggregateVerdict } from '../recovery/verdict'

/*
 * What the recovery controller shows the user about a task (both renderers): the checks that verify
 * it, the last verdict with each check's outcome, and each budget as used / limit / left. Pure: from
 * the recovery projection's task entry, the checks in force and the configured budgets.
 */

export interface BudgetRow {
  id: 'maxAttempts' | 'maxTotalSteps' | 'maxVerifyReruns' | 'maxStrategyChanges'
  label: string
  used: number
  limit: number
  left: number
}

export interface RecoveryView {
  /** The checks that verify the task (`argv` joined for reading). */
  checks: { id: string, command: string }[]
  /** Where they come from: set for this task (`/task checks`) or the host's config. */
  source: 'task' | 'config'
  lastVerdict?: {
    verdict: AggregateVerdict
    action: string
    reason: string
    stopReason?: string
    decidedAt: number
    checks: { checkId: string, verdict: string, exitCode?: number }[]
  }
  budgets: BudgetRow[]
  /**
   * A stage's background verification that gave up on a workspace that kept changing (coded, with the
   * node and how many rounds it lost), until a later attempt verifies the task again.
   */
  unverified?: {
    nodeId?: string, code: string, reason: string, message: string, lostRounds: number, at: number, seq: number
    /** What both renderers print before the message: `Stage <node> not verified (<code>).` */
    headline: string
  }
}

const BUDGET_LABELS: Record<BudgetRow['id'], string> = {
  maxAttempts: 'attempts',
  maxTotalSteps: 'steps',
  maxVerifyReruns: 'verification reruns',
  maxStrategyChanges: 'strategy changes',
}

export function recoveryView(task: TaskRecovery | undefined, checks: readonly CheckSpec[], budgets: Budgets): RecoveryView {
  const decision = task?.decisions.at(-1)
  const attempt = decision?.attemptId ? task!.attempts.findLast((a) => a.attemptId === decision.attemptId) : undefined
  const used = decision?.budgetsUsed ?? { attempts: task?.counters.attempts ?? 0, totalSteps: task?.counters.totalSteps ?? 0, verifyReruns: 0, strategyChanges: task?.counters.strategyChanges ?? 0 }
  const row = (id: BudgetRow['id'], count: number): BudgetRow => ({ id, label: BUDGET_LABELS[id], used: count, limit: budgets[id], left: Math.max(0, budgets[id] - count) })
  return {
    checks: checks.map((check) => ({ id: check.id, command: check.argv.join(' ') })),
    source: task?.checks ? 'task' : 'config',
    ...(decision ? {
      lastVerdict: {
        verdict: decision.verdict,
        action: decision.action,
        reason: decision.reason,
        ...(decision.stopReason ? { stopReason: decision.stopReason } : {}),
        decidedAt: decision.decidedAt,
        checks: (attempt?.checks ?? []).map((c) => ({ checkId: c.checkId, verdict: c.verdict, ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}) })),
      },
    } : {}),
    budgets: [
      row('maxAttempts', used.attempts),
      row('maxTotalSteps', used.totalSteps),
      row('maxVerifyReruns', used.verifyReruns),
      row('maxStrategyChanges', used.strategyChanges),
    ],
    ...(task?.unverified ? { unverified: unverifiedOf(task.unverified) } : {}),
  }
}

function unverifiedOf(record: NonNullable<TaskRecovery['unverified']>): NonNullable<RecoveryView['unverified']> {
  const { nodeId, code, reason, message, lostRounds, at, seq } = record
  const headline = `Stage${nodeId !== undefined ? ` ${nodeId}` : ''} not verified (${code}).`
  return { ...(nodeId !== undefined ? { nodeId } : {}), code, reason, message, lostRounds, at, seq, headline }
}

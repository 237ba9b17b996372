import type { Session } from '@taskward/host'
import {
  asTaskwardError, completionVeto, latestRecoveryAttempt, TaskwardError,
  type AttemptView, type RecoveryDecision, type Task,
} from '@taskward/protocol'
import { readCandidate } from './candidate'
import type { Recovery } from './service'
import { cancelMainAgent, stopCode, stopExecution, stopMessage, stopPauseReason } from './stop'

function failing(attempt: AttemptView | undefined): string[] {
  return (attempt?.checks ?? []).filter((check) => check.verdict === 'FAIL').map((check) => check.checkId)
}

/**
 * The completion gate: verify the candidate, decide, record, and turn the decision into an answer for
 * the supervisor. COMPLETE lets the completion go on; everything else refuses with a coded error and,
 * for CHANGE_STRATEGY and STOP, acts after the gate returns (a supervisor transition must not run
 * inside it).
 */
export class CompletionGate {
  constructor(private recovery: Recovery) {}

  /** A gate that cannot verify refuses (closed): an error is never a pass. */
  async ask(session: Session, task: Task): Promise<TaskwardError | undefined> {
    try {
      return await this.askUnguarded(session, task)
    } catch (error) {
      return asTaskwardError(error)
    }
  }

  private async askUnguarded(session: Session, task: Task): Promise<TaskwardError | undefined> {
    if (session.role !== 'main') return
    // The second ask, before a completion pass is applied: nothing to do if the candidate the COMPLETE
    // decision was about is still the one in the workspace.
    if (task.phase === 'reviewing' && await this.stillComplete(session, task)) return
    const { decision, attempt } = await this.recovery.exclusive(session, (resolved) => this.verify(resolved, task))
    return this.act(session, task, decision, attempt)
  }

  /** Record a 'done' attempt, decide, and re-verify without an agent turn while the decision says so. */
  async verify(session: Session, task: Task): Promise<{ decision: RecoveryDecision, attempt: AttemptView }> {
    let attempt = await this.recovery.recordAttempt(session, task.id, { claim: 'done' })
    let decision = await this.recovery.recordDecision(session, task.id, true)
    while (decision.action === 'REVERIFY') {
      attempt = await this.recovery.recordAttempt(session, task.id, { rerun: true, claim: 'done' })
      decision = await this.recovery.recordDecision(session, task.id, true)
    }
    return { decision, attempt }
  }

  private async stillComplete(session: Session, task: Task): Promise<boolean> {
    const state = await this.recovery.state(session)
    const attempt = latestRecoveryAttempt(state, task.id)
    const last = state.tasks[task.id]?.decisions.at(-1)
    if (!attempt || last?.attemptId !== attempt.attemptId || last.action !== 'COMPLETE') return false
    const candidate = await readCandidate(this.recovery.kernel.workspace, session.cwd, this.recovery.config.candidateSource)
    return completionVeto(state, task.id, candidate.digest) === undefined
  }

  act(session: Session, task: Task, decision: RecoveryDecision, attempt: AttemptView): TaskwardError | undefined {
    const details = {
      taskId: task.id, attemptId: decision.attemptId, candidate: decision.candidate, action: decision.action,
      reason: decision.reason, verdict: decision.verdict, ...decision.stopReason ? { stopReason: decision.stopReason } : {},
    }
    const failed = failing(attempt)
    switch (decision.action) {
      case 'COMPLETE':
        return
      case 'RETRY':
        return new TaskwardError('VERDICT_NEGATIVE',
          `Completion refused: checks failed on this candidate: ${failed.join(', ') || 'none passed'} (${decision.reason}). `
          + 'Fix what they report (their output is in the recovery attempt record), then request completion again.', { ...details, failing: failed })
      case 'CHANGE_STRATEGY':
        this.recovery.track(new Promise((resolve) => setImmediate(resolve)).then(() => this.recovery.home.supervisor.continueTask(session.id,
          `Recovery: the last attempts failed the same way (${failed.join(', ')}; ${decision.reason}). The current approach is not working: `
          + 'take a different approach to the failing checks instead of repeating the last change, then request completion again.')))
        return new TaskwardError('VERDICT_NEGATIVE',
          `Completion refused: ${failed.join(', ')} keep failing the same way (${decision.reason}). Take another approach; a follow-up with the controller's instruction is queued.`,
          { ...details, failing: failed })
      case 'REJECT_CANDIDATE':
        return new TaskwardError('CANDIDATE_ILLEGAL',
          `Completion refused: candidate ${decision.candidate} does not descend from the authoritative candidate ${decision.authoritative ?? ''}. Restore the authoritative candidate and redo the change on top of it.`, details)
      case 'STOP':
        // The agent stops now (its turn must not go on writing the preserved candidate); the pause is a
        // supervisor transition, so it follows once the gate has returned.
        cancelMainAgent(this.recovery, session)
        this.recovery.track(new Promise((resolve) => setImmediate(resolve)).then(() => stopExecution(this.recovery, session, task.id, stopPauseReason(decision))))
        return new TaskwardError(stopCode(decision), stopMessage(decision, this.recovery.config.budgets), details)
      default:
        // REVERIFY never reaches here (verify loops until another action).
        return new TaskwardError('VALIDATION_MISSING', `Completion refused: the recovery decision is ${decision.action}. Wait for the controller to re-verify.`, details)
    }
  }
}

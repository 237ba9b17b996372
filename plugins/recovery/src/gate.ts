import type { Session } from '@taskward/host'
import {
  asTaskwardError, completionVeto, latestRecoveryAttempt, TaskwardError,
  type AttemptView, type ErrorCode, type RecoveryDecision, type Task,
} from '@taskward/protocol'
import { readCandidate } from './candidate'
import type { Recovery } from './service'
import { cancelMainAgent, stopExecution } from './stop'

/** The refusal code of a STOP, by its stop reason. */
function stopCode(decision: RecoveryDecision): ErrorCode {
  const reason = decision.stopReason ?? ''
  if (reason === 'unverified' || reason === 'inconclusive') return 'VALIDATION_MISSING'
  if (reason === 'non_retryable') return 'CONFIG_INVALID'
  if (reason === 'pin_changed') return 'CHECK_PINNED'
  // budget_exhausted:<which>, and stagnation with no strategy change left.
  return 'BUDGET_EXHAUSTED'
}

function failing(attempt: AttemptView | undefined): string[] {
  return (attempt?.checks ?? []).filter((check) => check.verdict === 'FAIL').map((check) => check.checkId)
}

const STOP_ADVICE: Record<string, string> = {
  pin_changed: 'Files a check trusts (its pins) changed while the task ran, so no verdict on this candidate is trusted. Look at the change (the attempt record names the files); restore them, or accept them as they are with /task checks accept; then /task resume.',
  unverified: 'No checks are configured, so nothing verified this candidate and it is not complete. Set checks with /task checks <JSON> (or in the recovery configuration), then /task resume.',
  inconclusive: 'The checks stayed inconclusive after the allowed re-verifications. Look at the check output, fix the check or the host, then /task resume.',
  non_retryable: 'A check cannot be started (its program is missing or not executable); no agent turn can fix that. Fix the check configuration, then /task resume.',
  stagnation: 'The same failure keeps coming back and no strategy change is left. A person has to decide how to continue; /task resume after changing the approach or the budgets.',
}

/** The message of a STOP, naming its reason. */
function stopMessage(decision: RecoveryDecision): string {
  const reason = decision.stopReason ?? 'stopped'
  const advice = STOP_ADVICE[reason] ?? `The ${reason.replace('budget_exhausted:', '')} budget is used up. The candidate is preserved, not completed; raise the budget or continue by hand, then /task resume.`
  return `Recovery stopped the task (${reason}, ${decision.reason}); it is paused. ${advice}`
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
    const candidate = await readCandidate(this.recovery.home, session.cwd, this.recovery.config.candidateSource)
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
        this.recovery.track(new Promise((resolve) => setImmediate(resolve)).then(() => stopExecution(this.recovery, session, task.id)))
        return new TaskwardError(stopCode(decision), stopMessage(decision), details)
      default:
        // REVERIFY never reaches here (verify loops until another action).
        return new TaskwardError('VALIDATION_MISSING', `Completion refused: the recovery decision is ${decision.action}. Wait for the controller to re-verify.`, details)
    }
  }
}

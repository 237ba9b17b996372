import { isActive, setTimer } from '@taskward/cordis-compat'
import type { Session } from '@taskward/host'
import { lostToWrite, nextSettleStep, stageVerificationSuperseded, type RecoveryDecision, type TaskwardError } from '@taskward/protocol'
import { readCandidateOnce } from './candidate'
import type { Recovery } from './service'

/** What a stage report asks of recovery: verify the workspace as a 'progress' attempt of the task. */
export interface StageVerification {
  taskId: string
  nodeId?: string
}

/** Wait `ms` through the plugin's context (disposal removes the timer), or until `signal` aborts. */
function sleep(recovery: Recovery, ms: number, signal: AbortSignal) {
  return new Promise<void>((resolve) => {
    // A plugin that is no longer active gets no timer: as good as aborted.
    if (signal.aborted || !isActive(recovery.home)) return resolve()
    const done = () => {
      clear()
      signal.removeEventListener('abort', done)
      resolve()
    }
    const clear = setTimer(recovery.home, done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

/**
 * A stage report's verification, in the background. The agent works on meanwhile, so a write can
 * land while a check's copy is made (`runOnCopies` refuses it: the copy is not the candidate). Such a
 * lost round is not dropped: the lock is let go, the workspace is read until it holds still
 * (`nextSettleStep` decides how long to wait and when to give up), and the stage is verified again.
 * It stops without a record when a later attempt of the task was recorded meanwhile (that attempt
 * verified newer files) or the task is no longer executing; when it gives up, the refusal is recorded
 * (an `unverified` record, shown by `/task checks`) and logged once. Returns a budget STOP to apply.
 */
export async function verifyStage(recovery: Recovery, session: Session, stage: StageVerification): Promise<RecoveryDecision | undefined> {
  const { taskId, nodeId } = stage
  const policy = recovery.config.settle
  const signal = recovery.stopping
  let lostRounds = 0
  let firstLost = 0
  let attemptsBefore = 0
  while (true) {
    try {
      return await recovery.exclusive(session, async (resolved) => {
        const state = await recovery.usable(resolved)
        // Without checks there is nothing objective to measure; MISSING is decided at completion.
        if (!recovery.checksFor(state, taskId).length) {
          if (lostRounds) recovery.logger.info('task %s: the stage verification stops after %d lost round(s): the task has no checks now', taskId, lostRounds)
          return undefined
        }
        if (lostRounds && await superseded(recovery, resolved, taskId, attemptsBefore)) return undefined
        if (lostRounds) recovery.logger.debug('task %s: verifying the stage again after %d lost round(s)', taskId, lostRounds)
        attemptsBefore = state.tasks[taskId]?.counters.attempts ?? 0
        await recovery.recordAttempt(resolved, taskId, { claim: 'progress', ...nodeId ? { nodeId } : {} })
        return recovery.budgetStopAfterProgress(resolved, taskId)
      })
    } catch (error) {
      if (!lostToWrite(error) || signal.aborted) throw error
      lostRounds++
      firstLost ||= Date.now()
    }
    let waits = 0
    let quiet: boolean | undefined
    while (true) {
      const step = nextSettleStep(policy, { lostRounds, waits, elapsedMs: Date.now() - firstLost, quiet }, { workspace: session.cwd, taskId })
      if (step.kind === 'verify') break
      if (step.kind === 'give-up') {
        if (signal.aborted) return undefined
        await recordGiveUp(recovery, session, stage, step.error, lostRounds, attemptsBefore)
        return undefined
      }
      const before = await readDigest(recovery, session)
      await sleep(recovery, step.ms, signal)
      if (signal.aborted) return undefined
      quiet = before !== undefined && before === await readDigest(recovery, session)
      waits++
    }
  }
}

/** The candidate's digest now; undefined when a write moved it while it was read (not quiet). */
function readDigest(recovery: Recovery, session: Session): Promise<string | undefined> {
  return readCandidateOnce(recovery.kernel.workspace, session.cwd, recovery.config.candidateSource).then((read) => read.candidate.digest, (error) => {
    if (lostToWrite(error)) return undefined
    throw error
  })
}

/**
 * The task stopped executing, or an attempt newer than the lost one verified newer files. Said in the
 * log (debug), so a stage verification that stops is never silent.
 */
async function superseded(recovery: Recovery, session: Session, taskId: string, attemptsBefore: number) {
  const current = (await recovery.kernel.supervisor.state(session)).current
  const now = (await recovery.usable(session)).tasks[taskId]?.counters.attempts ?? 0
  const reason = stageVerificationSuperseded(current, taskId, { before: attemptsBefore, now })
  if (reason) recovery.logger.debug('task %s: the stage verification stops (%s)', taskId, reason === 'newer-attempt' ? 'a later attempt verified newer files' : 'the task is no longer executing')
  return reason !== undefined
}

async function recordGiveUp(recovery: Recovery, session: Session, stage: StageVerification, error: TaskwardError, lostRounds: number, attemptsBefore: number) {
  const recorded = await recovery.exclusive(session, async (resolved) => {
    // A disposed plugin records nothing more (the lock may have been waited for across disposal).
    if (recovery.stopping.aborted) return false
    await recovery.usable(resolved)
    // Nothing is missing when the task ended or a later attempt verified newer files meanwhile.
    if (await superseded(recovery, resolved, stage.taskId, attemptsBefore)) return false
    await recovery.append(resolved, 'unverified', `${stage.taskId}-u${resolved.seq}`, {
      taskId: stage.taskId, ...stage.nodeId ? { nodeId: stage.nodeId } : {}, code: error.code,
      reason: String(error.details?.reason ?? 'workspace-unsettled'), message: error.message.slice(0, 2000), lostRounds, at: Date.now(),
    })
    return true
  })
  if (recorded) recovery.logger.warn('%s: %s', error.code, error.message)
}

import type { Context } from 'cordis'
import Schema from 'schemastery'
import { mainSessionOf, type Session } from '@taskward/host'
import {
  comparePinnedSets, effectiveCycle, effectivePins, EventTypes, latestRecoveryAttempt, PinMatcher, progressDelta, progressSignalOf, TaskwardError,
  unpassableArgument, validateCheckSpecs, type SessionEvent, type Task,
} from '@taskward/protocol'
import { verifyStage } from './background'
import { CompletionGate } from './gate'
import type { Recovery } from './service'
import { resumeRefusal, stopExecution, stopPauseReason, StopReplay } from './stop'
import { stampPinned } from './pins'

const MAX_TEXT = 2000

async function currentTask(recovery: Recovery, session: Session): Promise<Task> {
  const task = (await recovery.home.supervisor.state(session)).current
  if (!task) throw new TaskwardError('TASK_NOT_FOUND', 'There is no task in this session; start one with /task new <objective>.')
  return task
}

/** `task_propose_strategy` and `task_request_retry`: recorded requests that authorize nothing. */
function registerAgentTools(ctx: Context, recovery: Recovery) {
  ctx.tools.register({
    name: 'task_propose_strategy',
    recordsOnly: true,
    description: 'Propose another approach to the current task. It is recorded for the controller and a person; it changes no decision and authorizes nothing.',
    parameters: Schema.object({ text: Schema.string().min(1).required() }),
    async execute({ text }: { text: string }, { session }) {
      const task = await currentTask(recovery, session)
      await recovery.exclusive(session, async (resolved) => {
        const state = await recovery.usable(resolved)
        const attempt = latestRecoveryAttempt(state, task.id)
        const recordId = `${task.id}-s${resolved.seq}`
        await recovery.append(resolved, 'strategy', recordId, {
          taskId: task.id, ...attempt ? { attemptId: attempt.attemptId } : {}, text: text.slice(0, MAX_TEXT), proposedBy: 'agent', at: Date.now(),
        })
      })
      return {
        recorded: true,
        changed: 'nothing',
        message: 'Your proposal is recorded. It authorizes nothing: only the recovery controller decides, from the check results, whether the strategy changes.',
      }
    },
  })

  ctx.tools.register({
    name: 'task_request_retry',
    recordsOnly: true,
    description: 'Ask for another attempt. The request is recorded with your next attempt; it changes no decision: only the controller authorizes retries.',
    parameters: Schema.object({ reason: Schema.string().min(1).required() }),
    async execute({ reason }: { reason: string }, { session }) {
      const task = await currentTask(recovery, session)
      return {
        recorded: true,
        changed: 'nothing',
        taskId: task.id,
        message: `Your request ("${reason.slice(0, 200)}") is recorded in the log and attached to your next attempt. It changes nothing: `
          + 'retries are authorized by the recovery controller from check results and budgets alone.',
      }
    },
  })
}

/**
 * `/task checks` shows the task's checks with their pins and what changed since the baseline;
 * `/task checks <JSON array>` sets them and re-stamps the pins; `/task checks accept` re-stamps the
 * pinned files as they are. Users only: it is a command, and no agent tool exists for it.
 */
function registerChecksCommand(ctx: Context, recovery: Recovery) {
  ctx.supervisor.registerSubcommand('checks', async ({ session, args }) => {
    const task = await currentTask(recovery, session)
    if (!args) {
      const state = await recovery.state(session)
      const own = state.tasks[task.id]?.checks
      const checks = recovery.checksFor(state, task.id)
      const baseline = state.tasks[task.id]?.pinBaseline
      const matcher = new PinMatcher(checks)
      const changed = baseline ? comparePinnedSets(baseline.files, await stampPinned(session.cwd, matcher), matcher) : undefined
      // A stage the background verification gave up on (the workspace kept changing): coded, with its seq.
      const unverified = state.tasks[task.id]?.unverified
      return {
        taskId: task.id, source: own ? 'task' : 'config', checks,
        pins: checks.map((check) => ({ checkId: check.id, patterns: effectivePins(check) })),
        ...unverified ? { unverified } : {},
        ...baseline ? { baseline: { seq: baseline.seq, files: baseline.files.map((file) => file.path) }, changed } : {},
      }
    }
    if (args.trim() === 'accept') {
      const files = await recovery.exclusive(session, (resolved) => recovery.pins.recordBaseline(resolved, task.id, 'accepted', effectiveCycle(task)))
      return { taskId: task.id, accepted: files.map((file) => file.path), message: `The ${files.length} pinned files of task ${task.id} are trusted as they are now.` }
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(args)
    } catch {
      throw new TaskwardError('CONFIG_INVALID', 'Write the checks as a JSON array, e.g. /task checks [{"id": "test", "argv": ["npm", "test"], "timeoutMs": 600000}].')
    }
    const checks = validateCheckSpecs(parsed)
    for (const check of checks) {
      const nul = unpassableArgument(check.argv)
      if (nul >= 0) {
        throw new TaskwardError('CONFIG_INVALID', `Check "${check.id}": argument ${nul} holds a NUL byte, which no program can receive. Remove it and set the checks again.`, { id: check.id })
      }
    }
    await recovery.exclusive(session, async (resolved) => {
      await recovery.usable(resolved)
      await recovery.append(resolved, 'checks', `${task.id}-checks-${resolved.seq}`, { taskId: task.id, checks, setBy: 'user', at: Date.now() })
      // New checks trust the files as they are now (the person setting them looked at them).
      await recovery.pins.recordBaseline(resolved, task.id, 'checks-set', effectiveCycle(task))
    })
    return {
      taskId: task.id, source: 'task', checks,
      message: checks.length ? `Task ${task.id} is verified by ${checks.map((c) => c.id).join(', ')} from now on.`
        : `Task ${task.id} has no checks now: its completion cannot be verified and will stop as unverified.`,
    }
  })
}

/** A stage report of a main session: verify the candidate as a 'progress' attempt (its delta is evidence; see `verifyStage`). */
function onStageReported(recovery: Recovery, session: Session, event: SessionEvent) {
  if (session.role !== 'main' || event.type !== EventTypes.toolResult) return
  if (event.data?.name !== 'task_report_stage' || event.data.error || !event.data.result?.taskId) return
  const { taskId, nodeId } = event.data.result as { taskId: string, nodeId?: string }
  recovery.track((async () => {
    const stop = await verifyStage(recovery, session, { taskId, ...nodeId ? { nodeId } : {} })
    // Outside the recovery lock: stopping is a supervisor transition.
    if (stop) await stopExecution(recovery, session, taskId, stopPauseReason(stop))
  })())
}

/**
 * The supervisor's progress signal: before it spends a progress review on turns without a stage
 * report, verify the current candidate and compare it with the last attempt. Recorded as a 'progress'
 * attempt, so the measurement is evidence in the log like any other.
 */
function registerProgressSource(ctx: Context, recovery: Recovery) {
  ctx.supervisor.registerProgressSignal(async (session, task) => {
    const measured = await recovery.exclusive(session, async (resolved) => {
      const state = await recovery.usable(resolved)
      // Without checks nothing objective can be measured: the supervisor falls back to its review.
      if (!recovery.checksFor(state, task.id).length) return undefined
      const previous = latestRecoveryAttempt(state, task.id)
      const attempt = await recovery.recordAttempt(resolved, task.id, { claim: 'progress' })
      const stop = await recovery.budgetStopAfterProgress(resolved, task.id)
      return { signal: progressSignalOf(progressDelta(previous, attempt)), stop }
    })
    // A used-up budget stops the task before the supervisor continues it or asks for a review (both
    // skip a paused task).
    if (measured?.stop) await stopExecution(recovery, session, task.id, stopPauseReason(measured.stop))
    return measured?.signal
  })
}

/** Everything recovery hooks into: the completion gate, agent tools, /task checks, stage reports, resume. */
export function wireRecovery(ctx: Context, recovery: Recovery) {
  const gate = new CompletionGate(recovery)
  ctx.supervisor.registerCompletionGate((session, task) => gate.ask(session, task))
  registerAgentTools(ctx, recovery)
  registerChecksCommand(ctx, recovery)
  registerProgressSource(ctx, recovery)
  // A budget STOP refuses /task resume until the budget is raised (on every path to the paused task).
  ctx.supervisor.registerResumeGuard((session, task) => resumeRefusal(recovery, session, task))
  // An observer, not a `session/event` listener: a direct call on every append (see `sessions.observe`).
  ctx.sessions.observe((session, event) => onStageReported(recovery, session, event))
  // Resume reconciles the candidate journal before anything else is decided, and re-applies a STOP
  // whose pause was lost (then refuses: nothing runs until a person resumes the paused task).
  const stops = new StopReplay(recovery)
  ctx.on('agent/before-resume', async (session) => {
    if (session.role !== 'main') return
    try {
      await recovery.reconcile(session)
      return await stops.replay(session, true)
    } catch (error) {
      return TaskwardError.is(error) ? error : new TaskwardError('INTERNAL', `Recovery could not reconcile the candidate journal: ${(error as Error).message}`)
    }
  })
  // A replay that fails refuses (closed): the STOP may still be unapplied.
  const replay = (session: Session) => stops.replay(session).catch((error) => TaskwardError.is(error) ? error
    : new TaskwardError('INTERNAL', `Recovery could not check for a STOP to re-apply: ${(error as Error).message}`))
  // A step guard, called directly by every turn (an `agent/before-step` listener costs an event dispatch per step).
  ctx.agents.stepGuard((agent) => replay(agent.session))
  ctx.tools.guard(async ({ session }) => {
    // A consultation (and a sub-agent it started) shares the main session's workspace: the main
    // session's unapplied STOP binds it too.
    const main = await mainSessionOf(recovery.kernel.sessions, session)
    if (!main) return
    const refusal = await replay(main)
    return refusal ? { deny: { code: refusal.code, message: refusal.message, ...refusal.details !== undefined ? { details: refusal.details } : {} } } : undefined
  })
  return gate
}

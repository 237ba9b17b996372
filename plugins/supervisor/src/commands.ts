import type { Context } from 'cordis'
import { randomUUID } from 'node:crypto'
import type { Session } from '@taskward/host'
import {
  approve, assertBinding, clear, edit, newTask, pause, phaseAdvice, resume, resumeTarget,
  setEnabled, taskStatusText, TaskwardError, type Task, type TaskBinding, type TransitionAt,
} from '@taskward/protocol'
import { reviewRecord } from './reviews'
import type { Supervisor } from './service'

const USAGE = '/task [status [--json]] | new <objective> | approve | pause | resume | edit <objective> | clear | off | on '
  + '(approve, pause, resume, clear, off and on accept an optional <taskId>@<revision> binding)'

/** The subcommands this plugin handles itself; others may add more with `registerSubcommand`. */
/**
 * A command whose transition starts a turn waits for its records' write, not their flush: the
 * command's reply is committed durable after it (a flush covers every commit before it), and the
 * turn's model request is not an effect (see `Session.appendBatch`'s `ack`).
 */
const LEADS_TO_A_TURN = { ack: 'written' } as const

export const BUILTIN_SUBCOMMANDS: readonly string[] = ['', 'status', 'new', 'approve', 'pause', 'resume', 'edit', 'clear', 'off', 'on']

/** `<taskId>@<revision>` → binding; empty → undefined; anything else is a usage error. */
export function parseBinding(text: string): TaskBinding | undefined {
  if (!text) return
  const match = /^(\S+)@(\d+)$/.exec(text)
  if (!match) throw new TaskwardError('TASK_INVALID', `"${text}" is not a task binding; write <taskId>@<revision> or nothing. Usage: ${USAGE}`)
  return { taskId: match[1], revision: Number(match[2]) }
}

function reply(task: Task, message: string) {
  return { taskId: task.id, revision: task.revision, phase: task.phase, message }
}

/** What `/task` reads of the console, when one is loaded (optional: ctx.get). */
interface ConsoleLinks { impactLink?(sessionId: string): string }

/**
 * `/task` (status): the status view and, in `statusText`, the same status in words (`taskStatusText`
 * of @taskward/protocol: phase, nodes, what is next, what waits for the user), which a host that shows
 * command replies as text shows (DSH). When a repair proposal waits, it says so first, with the path of
 * the console's impact panel where the user decides (`/task console` answers a login link to it).
 * `json`: the view alone (`/task status --json`).
 */
export async function statusReply(ctx: Context, supervisor: Supervisor, session: Session, options: { json?: boolean } = {}) {
  const view = await supervisor.status(session)
  const waiting = view.proposals.findLast((p) => p.status === 'pending')
  const link = waiting && (ctx.get('webConsole') as ConsoleLinks | undefined)?.impactLink?.(session.id)
  const reply = waiting
    ? {
        ...view,
        awaitingDecision: { id: waiting.id, title: waiting.title, ...(link ? { link } : {}) },
        message: `A repair proposal waits for your decision: "${waiting.title}".`
          + (link ? ` Review its impact and confirm or decline at ${link} (/task console answers a login link).` : ''),
      }
    : view
  return options.json ? reply : { ...reply, statusText: taskStatusText(reply) }
}

/** `/task …`: the user's control of the session's task. */
export function registerTaskCommand(ctx: Context, supervisor: Supervisor) {
  /** A transition checked against the caller's binding (a stale panel or command → TASK_STALE). */
  const bound = (binding: TaskBinding | undefined, fn: (task: Task | undefined, at: TransitionAt) => Task) =>
    (task: Task | undefined, at: TransitionAt) => fn(binding ? assertBinding(task, binding) : task, at)

  ctx.commands.register('task', async ({ session, args }) => {
    const sub = args.split(/\s+/)[0] ?? ''
    const rest = args.slice(sub.length).trim()
    switch (sub) {
      case '':
      case 'status':
      case '--json': {
        const flag = sub === '--json' ? sub : rest
        if (flag && flag !== '--json') throw new TaskwardError('TASK_INVALID', `/task status takes nothing or --json, not "${flag}". Usage: ${USAGE}`)
        return statusReply(ctx, supervisor, session, { json: flag === '--json' })
      }
      case 'new': {
        const id = `task-${randomUUID()}`
        const task = await supervisor.apply(session, (t, at) => newTask(t, { objective: rest }, { ...at, id }), LEADS_TO_A_TURN)
        supervisor.controller.arm(session.id)
        supervisor.controller.queueNext(session.id, task)
        return reply(task, `Task ${task.id} created; the agent plans it and submits the plan for review.`)
      }
      case 'approve': {
        const task = await supervisor.apply(session, bound(parseBinding(rest), approve), LEADS_TO_A_TURN)
        supervisor.controller.arm(session.id)
        supervisor.controller.queueNext(session.id, task)
        return reply(task, `Plan approved; task ${task.id} is executing.`)
      }
      case 'pause': {
        const task = await supervisor.apply(session, bound(parseBinding(rest), (t, at) => pause(t, { reason: 'user' }, at)))
        supervisor.controller.disarm(session.id)
        supervisor.mainAgent(session.id)?.cancel()
        return reply(task, `Task ${task.id} paused; continue it with /task resume.`)
      }
      case 'resume':
        return resumeTask(ctx, supervisor, session, parseBinding(rest))
      case 'edit': {
        const task = await supervisor.apply(session, (t, at) => edit(t, { objective: rest }, at))
        return reply(task, `Objective changed; task ${task.id} is planning again.`)
      }
      case 'clear': {
        const task = await supervisor.apply(session, bound(parseBinding(rest), clear))
        supervisor.controller.disarm(session.id)
        return reply(task, `Task ${task.id} cleared; it stays readable in history. Start another with /task new.`)
      }
      case 'off':
      case 'on': {
        const enabled = sub === 'on'
        let changed = false
        const task = await supervisor.apply(session, bound(parseBinding(rest), (t, at) => {
          const next = setEnabled(t, { enabled }, at)
          changed = next !== t
          return next
        }))
        if (!enabled) supervisor.controller.disarm(session.id)
        // A complete task stays complete and closed to edits; the new revision makes earlier repair proposals stale.
        const complete = task.phase === 'complete' && changed
          ? ` Task ${task.id} stays complete and closed to edits; repair proposals made before this are stale`
            + (enabled ? '; propose the repair again if it is still needed.' : ', and no repair can be proposed or confirmed until /task on.')
          : ''
        return reply(task, (enabled ? `Supervision of task ${task.id} is on.` : `Supervision of task ${task.id} is off; /task on turns it back on.`) + complete)
      }
      default: {
        const added = supervisor.subcommand(sub)
        if (added) {
          // Another plugin's subcommand may act outside the log: its command is durable first (on DSH,
          // DSH's own record of it too: its flush).
          await session.durable()
          return added({ session, args: rest })
        }
        throw new TaskwardError('TASK_INVALID', `Unknown /task subcommand "${sub}". Usage: ${USAGE}`)
      }
    }
    // Its own subcommands only write records (pause's cancel stops this process's turn); another
    // plugin's waits for its command's flush above.
  }, { recordsOnly: true })
}

/**
 * /task resume: bring the main agent back (its refusal changes nothing), resume a paused task, re-run
 * a review whose reviewer is gone (after a restart or fault), arm the controller and follow up.
 */
async function resumeTask(ctx: Context, supervisor: Supervisor, session: Session, binding: TaskBinding | undefined) {
  boundLive((await supervisor.state(session)).current, binding)
  const agent = supervisor.mainAgent(session.id) ?? (session.model ? await ctx.agents.resume(session.id) : undefined)
  // Bringing the agent back may have changed the task (recovery re-applies a STOP whose pause was lost):
  // decide on the task as it is now, so that every path to a paused task meets the same resume guards.
  const state = await supervisor.state(session)
  const current = boundLive(state.current, binding)
  // A live task that is not paused is asked about too: /task resume is what drives it after a restart
  // (or after a turn that ended on its budget's last token), and a budget it used up would refuse its first step.
  if (current.phase !== 'awaiting-approval') {
    const refusal = await supervisor.resumeRefusal(session, current)
    if (refusal) throw refusal
  }
  // Act only on the revision the guards were asked about: a task that changed meanwhile (resumed
  // elsewhere, then paused for its budget) is refused TASK_STALE, and the next /task resume asks again.
  const seen: TaskBinding = { taskId: current.id, revision: current.revision }
  const pending = current.pendingReview
  const reviewerGone = current.phase === 'reviewing' && pending
    && !(ctx.agents.get(state.reviews.find((job) => job.jobId === pending.jobId)?.reviewerSessionId ?? ''))
  let task = current
  if ((current.phase === 'paused' && resumeTarget(current) === 'reviewing') || reviewerGone) {
    const outcome = await supervisor.reviews.request(session, pending!.kind, (t, jobId, at) => {
      const live = boundLive(t, seen)
      if (live.phase !== 'reviewing') return resume(live, { reviewJobId: jobId }, at)
      const paused = pause(live, { reason: 'restart' }, at)
      return [paused, resume(paused, { reviewJobId: jobId }, { ...at, seq: at.seq + 1 })]
    }, { nodeId: pending!.nodeId })
    task = outcome.task
    await failReplacedJob(supervisor, session, pending!.jobId)
  } else if (current.phase === 'paused') {
    task = await supervisor.apply(session, (t, at) => resume(boundLive(t, seen), {}, at), LEADS_TO_A_TURN)
  } else if (current.phase === 'awaiting-approval') {
    return reply(current, phaseAdvice(current))
  }
  supervisor.controller.arm(session.id)
  if (agent) supervisor.controller.queueNext(session.id, task, undefined, { force: true })
  return reply(task, `Task ${task.id} resumed${agent ? '; the agent continues' : ''}.`)
}

function boundLive(task: Task | undefined, binding: TaskBinding | undefined): Task {
  return resumable(binding ? assertBinding(task, binding) : task)
}

/** A task /task resume can act on: present, not terminal, supervised (the same codes the transitions use). */
function resumable(task: Task | undefined): Task {
  if (!task) throw new TaskwardError('TASK_NOT_FOUND', 'There is no task in this session; start one with /task new <objective>.')
  if (task.phase === 'complete') throw new TaskwardError('TASK_COMPLETED', phaseAdvice(task), { taskId: task.id })
  if (task.phase === 'cleared') throw new TaskwardError('TASK_NOT_EXECUTING', phaseAdvice(task), { taskId: task.id })
  if (!task.enabled) {
    throw new TaskwardError('SUPERVISOR_DISABLED', `Supervision of task ${task.id} is off; turn it on with /task on first.`, { taskId: task.id })
  }
  return task
}

/** The job a resumed review replaced can never be applied again: record it as failed. */
async function failReplacedJob(supervisor: Supervisor, session: Session, jobId: string) {
  await supervisor.transact(session, (state) => {
    const job = state.reviews.find((r) => r.jobId === jobId)
    if (!job || job.status !== 'requested') return { records: [], result: undefined }
    return { records: [reviewRecord({ ...job, status: 'failed' })], result: undefined }
  }, LEADS_TO_A_TURN)
}

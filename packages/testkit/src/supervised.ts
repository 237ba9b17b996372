/*
 * Driving a supervised task in tests, the way the main agent, the reviewer and the user would: tools,
 * `/task` commands and a scripted reviewer. Needs the `supervisor` plugin (and `repair` plus `workspace`
 * for `proposeAndConfirm`). Everything goes through the real services and is recorded in the session log.
 */
import type { ModelStep, Session, ToolResult } from '@taskward/host'
import { readyNodes, TaskwardError, type ReviewVerdict, type Task, type TaskPlan } from '@taskward/protocol'
import type {} from '@taskward/plugin-supervisor'
import type {} from '@taskward/plugin-repair'
import type { TestHost } from './host'
import { waitFor, type WaitOptions } from './wait'

/** One answer of the scripted reviewer: a verdict, or a verdict with findings and evidence seqs. */
export type ReviewAnswer = ReviewVerdict | { verdict: ReviewVerdict, findings?: string[], evidenceSeqs?: number[] }

/** The scripted-model step that answers a review with `review_verdict`. */
export function verdictStep(answer: ReviewAnswer): ModelStep {
  const { verdict, findings = [], evidenceSeqs = [] } = typeof answer === 'string' ? { verdict: answer } : answer
  return { toolCalls: [{ name: 'review_verdict', args: { verdict, findings, evidenceSeqs } }] }
}

/**
 * Queue the scripted reviewer's answers, one per coming review (plan, stage, completion or progress),
 * e.g. `scriptReviewer(host, 'pass', { verdict: 'revise', findings: ['add a test'] })`. The host's
 * reviewer model must be `scripted` (the supervisor's default `reviewerModel`).
 */
export function scriptReviewer(host: TestHost, ...answers: ReviewAnswer[]) {
  host.scripted.script('reviewer', answers.map(verdictStep))
}

/** Run a tool as the session's agent; the result as recorded (`error` holds a refusal). Never throws for a refusal. */
export function callTool(host: TestHost, session: Session, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return host.ctx.tools.execute(session, name, args, { agentId: session.id })
}

/** Run a tool that must succeed and return its result; a refusal is thrown as a `TaskwardError` (code, message, details). */
export async function runTool<R = any>(host: TestHost, session: Session, name: string, args: Record<string, unknown> = {}): Promise<R> {
  const outcome = await callTool(host, session, name, args)
  if (outcome.error) throw new TaskwardError(outcome.error.code as any, `${name}: ${outcome.error.message}`, outcome.error.details)
  return outcome.result
}

/** Send user input (`/task approve`, …) and return the command's reply; a coded error is thrown as a `TaskwardError`. */
export async function runCommand<R = any>(host: TestHost, session: Session, text: string): Promise<R> {
  const answer = await host.ctx.commands.input(session, text)
  if (answer?.error) throw new TaskwardError(answer.error.code as any, `${text}: ${answer.error.message}`, answer.error.details)
  return answer?.reply as R
}

/** Wait until no review of the session is still requested and every reviewer agent is idle. */
export async function reviewsSettled(host: TestHost, session: Session, options: WaitOptions = {}) {
  await waitFor(async () => (await host.ctx.supervisor.state(session)).reviews.every((job) => job.status !== 'requested'),
    { what: 'reviews to settle', ...options })
  await waitFor(() => host.ctx.agents.list().every((agent) => agent.session.role !== 'reviewer' || (agent.state === 'idle' && !agent.queued)),
    { what: 'reviewer agents to go idle', ...options })
}

/** Wait until reviews settled and every agent (the main agent's continuation turns included) is idle. */
export async function allIdle(host: TestHost, session: Session, options: WaitOptions = {}) {
  await waitFor(async () => {
    await reviewsSettled(host, session, options)
    return host.ctx.agents.list().every((agent) => agent.state === 'idle' && !agent.queued)
  }, { what: 'agents to go idle', ...options })
}

/** A one-node plan, enough to drive a task through every phase. */
export const ONE_NODE_PLAN: TaskPlan = { acceptanceCriteria: ['it works'], nodes: [{ id: 'a', title: 'do it' }] }

export interface DriveOptions {
  /** Objective of the new task (default 'a supervised task'). */
  objective?: string
  /** The plan the agent submits (default `ONE_NODE_PLAN`). */
  plan?: TaskPlan
}

/** The task now: current state of the session's supervisor projection. */
export async function currentTask(host: TestHost, session: Session): Promise<Task | undefined> {
  return (await host.ctx.supervisor.state(session)).current
}

/**
 * `/task new`, `task_submit_plan` with a passing plan review, and `/task approve`: the task is `active`.
 * Tools are called directly (no model turn), so automatic continuation may stay on or off.
 */
export async function driveToApproval(host: TestHost, session: Session, options: DriveOptions = {}): Promise<Task> {
  await runCommand(host, session, `/task new ${options.objective ?? 'a supervised task'}`)
  scriptReviewer(host, 'pass')
  await runTool(host, session, 'task_submit_plan', (options.plan ?? ONE_NODE_PLAN) as unknown as Record<string, unknown>)
  await reviewsSettled(host, session)
  await runCommand(host, session, '/task approve')
  return (await currentTask(host, session))!
}

/**
 * Drive the session's task to `complete` with passing reviews: without a live task, one is created and
 * approved first (`driveToApproval`); then every node that has not passed runs start → report → pass in
 * dependency order, and the completion review passes. Also finishes a task a confirmed repair reopened.
 * Throws when the task does not end complete (a completion gate refused, say), with the refusal's code.
 */
export async function driveToCompletion(host: TestHost, session: Session, options: DriveOptions = {}): Promise<Task> {
  let task = await currentTask(host, session)
  if (!task || task.phase === 'complete' || task.phase === 'cleared') task = await driveToApproval(host, session, options)
  if (task.phase !== 'active') {
    throw new TaskwardError('TASK_NOT_EXECUTING', `driveToCompletion: task ${task.id} is ${task.phase}; it must be active.`)
  }
  for (let ready = readyNodes(task); ready.length; ready = readyNodes(task)) {
    for (const nodeId of ready) {
      if (task.nodeRuns[nodeId].status !== 'running') await runTool(host, session, 'task_start_node', { nodeId })
      scriptReviewer(host, 'pass')
      await runTool(host, session, 'task_report_stage', { nodeId })
      await reviewsSettled(host, session)
    }
    task = (await currentTask(host, session))!
  }
  scriptReviewer(host, 'pass')
  await runTool(host, session, 'task_request_completion', {})
  await reviewsSettled(host, session)
  task = (await currentTask(host, session))!
  if (task.phase !== 'complete') {
    const why = task.completionReview?.findings.at(-1)
    throw new TaskwardError('TASK_NOT_COMPLETE', `driveToCompletion: task ${task.id} ended ${task.phase}${why ? ` (${why})` : ''}.`)
  }
  return task
}

export interface RepairRequest {
  /** Nodes the defect is in (their descendants are reopened too). */
  rootNodeIds: string[]
  /** Default 'repair <roots>'. */
  title?: string
  /** Default 'a defect found after completion'. */
  reason?: string
  /** Main-session evidence seqs; default: a fresh `assistant/message` stating the reason. */
  evidenceSeqs?: number[]
}

/**
 * A repair of the session's complete task, as the main agent proposes it (`task_propose_repair`) and the
 * user confirms it (the binding a console click sends, through `repair.confirm`). Needs the `repair` and
 * `workspace` plugins and a session whose role is `main` (e.g. `host.ctx.supervisor.startSession`).
 * Returns the proposal answer and the confirmation outcome (`reopened`, …).
 */
export async function proposeAndConfirm(host: TestHost, session: Session, request: RepairRequest) {
  const reason = request.reason ?? 'a defect found after completion'
  const evidenceSeqs = request.evidenceSeqs ?? [(await session.append('assistant/message', { text: reason })).seq]
  const proposal = await runTool<{ proposalId: string, taskId: string, revision: number, [key: string]: unknown }>(host, session, 'task_propose_repair', {
    title: request.title ?? `repair ${request.rootNodeIds.join('+')}`, reason, rootNodeIds: request.rootNodeIds, evidenceSeqs,
  })
  const confirmation = await host.ctx.repair.confirm(session.id, { proposalId: proposal.proposalId, taskId: proposal.taskId, revision: proposal.revision })
  return { proposal, confirmation }
}

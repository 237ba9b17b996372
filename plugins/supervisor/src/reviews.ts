import type { Context, Logger } from 'cordis'
import { isActive, onDispose } from '@taskward/cordis-compat'
import { randomUUID } from 'node:crypto'
import { original, type Agent, type Agents, type Session, type TurnSummary } from '@taskward/host'
import {
  applyCompletionReview, applyPlanReview, applyStageReview, errorResult, pause, ReviewPageBuilder, reviewJobEnvelope, taskStateEnvelope, TaskwardError,
  type RecordEnvelope, type ReviewJob, type ReviewVerdict, type SupervisorState, type Task, type TransitionAt,
} from '@taskward/protocol'
import type { Config } from './config'
import { reviewerPrompt } from './instructions'
import type { Supervisor } from './service'

/** What a reviewer answers with (the `review_verdict` tool). */
export interface VerdictInput {
  verdict: ReviewVerdict
  findings: string[]
  evidenceSeqs: number[]
}

/**
 * Task transitions that end in a review named `jobId` (submitPlan, reportStage, requestCompletion,
 * resume): one task, or several consecutive ones (each written as its own state record, the last one
 * waiting for the review). `at.seq` is where the first record lands.
 */
export type ReviewedTransition = (task: Task | undefined, jobId: string, at: TransitionAt) => Task | Task[]

export { REVIEW_PAGE_LIMIT } from '@taskward/protocol'

/** Events read from the main log at a time while a review page fills (fragments and records are skipped). */
const READ_CHUNK = 500

/** The one repair turn a reviewer gets when it answered in text without recording a verdict. */
export const VERDICT_REPAIR_PROMPT = 'Your review is not recorded yet: a verdict written as text does not count. '
  + 'Record your verdict now with `review_verdict` {verdict: pass | revise | needs-user, findings, evidenceSeqs}; this is the last turn this review gets.'

export function reviewRecord(job: ReviewJob): RecordEnvelope<ReviewJob> {
  return reviewJobEnvelope(job, `${job.jobId}:${job.status}`)
}

/** The job a reviewer session works on, from its main session's projection. */
export function jobOfReviewer(state: SupervisorState, reviewerSessionId: string): ReviewJob | undefined {
  return state.reviews.findLast((job) => job.reviewerSessionId === reviewerSessionId)
}

/** Whether the task still waits for `job`: a result for any other job is stale and ignored. */
export function isPendingJob(state: SupervisorState, job: ReviewJob): boolean {
  const task = state.current
  if (job.status !== 'requested' || !task || task.id !== job.taskId || !task.enabled) return false
  if (job.kind === 'progress') return task.phase === 'active' && task.revision === job.taskRevision
  return task.phase === 'reviewing' && task.pendingReview?.jobId === job.jobId && task.pendingReview.forRevision === job.taskRevision
}

/**
 * Reviews: each job runs in its own reviewer session (parentId = the main session, role 'reviewer')
 * driven by the configured model. The reviewer reads bounded pages of the main log up to the job's
 * cutoff and answers once with a verdict; a turn that ends without one pauses the task (review-fault).
 */
export class Reviews {
  /** Taken at start: a stopping host disposes its logger service before work in flight settles. */
  private readonly logger: Logger
  /** Jobs whose reviewer already had its verdict repair turn (in memory: reviewers do not survive a restart). */
  private readonly repaired = new Set<string>()
  /** The deadline timer of each running job. */
  private readonly deadlines = new Map<string, NodeJS.Timeout>()

  /** The agent registry itself (a required inject of the supervisor): cordis' getter costs a stack capture a read. */
  private readonly agents: Agents

  constructor(private home: Context, private supervisor: Supervisor, private config: Config) {
    this.logger = home.logger('supervisor')
    this.agents = original(home.agents)
    home.on('agent/turn-end', (agent, summary) => {
      if (agent.session.role !== 'reviewer') return
      this.onReviewerTurnEnd(agent, summary).catch((error) => {
        // A review still in flight when the host stops fails on disposed services: expected then.
        if (isActive(home)) this.logger.warn(error)
      })
    })
    onDispose(home, () => {
      for (const timer of this.deadlines.values()) clearTimeout(timer)
      this.deadlines.clear()
    })
  }

  /** Fail `job` if it is still running when its deadline passes; the reviewer is stopped. */
  private armDeadline(main: Session, job: ReviewJob) {
    const timer = setTimeout(() => {
      this.deadlines.delete(job.jobId)
      const reviewer = this.agents.get(job.reviewerSessionId)
      this.fail(main, job, `the review passed its deadline of ${this.config.reviewDeadlineMs} ms (reviewDeadlineMs)`)
        .catch((error) => this.logger.warn(error))
        .finally(() => reviewer?.cancel())
    }, this.config.reviewDeadlineMs)
    timer.unref?.()
    this.deadlines.set(job.jobId, timer)
  }

  private settle(jobId: string) {
    clearTimeout(this.deadlines.get(jobId))
    this.deadlines.delete(jobId)
    this.repaired.delete(jobId)
  }

  /**
   * Apply `transition` with a new review job, record the job and start its reviewer. `note` (the
   * agent's summary) goes into the reviewer's prompt. Returns the new task and job.
   */
  async request(main: Session, kind: ReviewJob['kind'], transition: ReviewedTransition, options: {
    nodeId?: string, evidenceSeqs?: number[], note?: string,
  } = {}): Promise<{ task: Task, job: ReviewJob }> {
    const jobId = randomUUID()
    let reviewer: Agent | undefined
    const outcome = await this.supervisor.transact(main, async (state) => {
      const steps = [transition(state.current, jobId, { seq: main.seq, time: Date.now() })].flat()
      const next = steps.at(-1)!
      reviewer = await this.createReviewer(main)
      const job = this.newJob(main, reviewer, next, kind, jobId, options)
      return { records: [...steps.map((t) => taskStateEnvelope(t)), reviewRecord(job)], result: { task: next, job } }
    }, { ack: 'written' })
    this.armDeadline(main, outcome.job)
    reviewer!.followup(reviewerPrompt(outcome.job, outcome.task, options.note), { origin: 'controller', jobId })
    return outcome
  }

  /** A progress review of an active task: a job only, the task does not change until the verdict. */
  async requestProgress(main: Session): Promise<ReviewJob | undefined> {
    const jobId = randomUUID()
    let reviewer: Agent | undefined
    const outcome = await this.supervisor.transact(main, async (state) => {
      const task = state.current
      if (!task || task.phase !== 'active' || !task.enabled) return { records: [], result: undefined }
      if (state.reviews.some((job) => isPendingJob(state, job))) return { records: [], result: undefined }
      reviewer = await this.createReviewer(main)
      const job = this.newJob(main, reviewer, task, 'progress', jobId, {})
      return { records: [reviewRecord(job)], result: { task, job } }
    }, { ack: 'written' })
    if (!outcome) return
    this.armDeadline(main, outcome.job)
    reviewer!.followup(reviewerPrompt(outcome.job, outcome.task), { origin: 'controller', jobId })
    return outcome.job
  }

  /**
   * `review_read_log`: a page of the main log up to the job's cutoff, as the model lived it (messages,
   * tool calls, tool results; `reviewPage` in @taskward/protocol skips the rest and cuts long fields).
   * With `offset`, the one event `from`, its long field from that character on.
   */
  async readLog(reviewerSession: Session, from = 0, limit = 50, offset?: number) {
    const { main, job } = await this.jobFor(reviewerSession)
    const builder = new ReviewPageBuilder({ from, limit, cutoffSeq: job.cutoffSeq, ...(offset !== undefined ? { offset } : {}) })
    for (let at = from; builder.wants(at);) {
      const events = await main.read({ from: at, limit: Math.min(READ_CHUNK, job.cutoffSeq - at + 1) })
      if (!events.length) break
      let more = true
      for (const event of events) if (!(more = builder.add(event))) break
      if (!more) break
      at = events.at(-1)!.seq + 1
    }
    return { sessionId: main.id, cutoffSeq: job.cutoffSeq, ...builder.page() }
  }

  /** `review_verdict`: apply the reviewer's answer if its job is still the one the task waits for. */
  async verdict(reviewerSession: Session, input: VerdictInput) {
    const { main, job } = await this.jobFor(reviewerSession)
    const evidenceSeqs = [...new Set(input.evidenceSeqs)].sort((a, b) => a - b)
    const outside = evidenceSeqs.find((seq) => seq > job.cutoffSeq)
    if (outside !== undefined) {
      throw new TaskwardError('TASK_INVALID', `Evidence seq ${outside} is after the review cutoff ${job.cutoffSeq}; cite events you read.`)
    }
    const findings = input.findings.map((f) => f.trim()).filter(Boolean)
    let gate: TaskwardError | undefined
    if (job.kind === 'completion' && input.verdict === 'pass') {
      const task = (await this.supervisor.state(main)).current
      if (task) gate = await this.supervisor.completionRefusal(main, task)
    }
    const reviewer = this.agents.get(reviewerSession.id)
    const task = await this.supervisor.transact(main, (state) => {
      const latest = state.reviews.find((r) => r.jobId === job.jobId)
      if (!latest || !isPendingJob(state, latest)) {
        // Old reviewer callbacks stay bound to their job: this answer changes nothing, and the turn ends.
        reviewer?.cancel()
        throw new TaskwardError('TASK_STALE',
          `Review job ${job.jobId} is no longer the review task ${job.taskId} waits for (it moved on); this verdict was not applied.`,
          { jobId: job.jobId })
      }
      const at = { seq: main.seq + 1, time: Date.now() }
      const finished: ReviewJob = { ...latest, status: 'finished', verdict: input.verdict, findings, evidenceSeqs }
      const next = this.outcome(state.current!, finished, gate, at)
      return { records: [reviewRecord(finished), ...(next ? [taskStateEnvelope(next)] : [])], result: next ?? state.current! }
    }, { ack: 'written' })
    // The answer is given: stop the reviewer's turn so it takes no further steps.
    this.settle(job.jobId)
    reviewer?.cancel()
    const extra = job.kind === 'progress' && input.verdict === 'revise' && findings.length
      ? `The progress reviewer says:\n${findings.map((f) => `- ${f}`).join('\n')}` : undefined
    this.supervisor.controller.afterReview(main.id, task, extra)
    // A completion gate that vetoed this pass: its coded refusal (details included) goes back to the reviewer.
    const refusal = gate && job.kind === 'completion' && input.verdict === 'pass' ? { refusal: errorResult(gate) } : {}
    return { applied: true, jobId: job.jobId, kind: job.kind, verdict: input.verdict, taskId: task.id, revision: task.revision, phase: task.phase, ...refusal }
  }

  private outcome(task: Task, job: ReviewJob, gate: TaskwardError | undefined, at: TransitionAt): Task | undefined {
    const review = { jobId: job.jobId, verdict: job.verdict!, findings: job.findings ?? [] }
    switch (job.kind) {
      case 'plan': return applyPlanReview(task, review, at)
      case 'stage': return applyStageReview(task, review, at)
      case 'completion': {
        // A completion gate (recovery) may still veto a pass: the task goes back to work with its reason.
        const vetoed = gate && review.verdict === 'pass'
          ? { ...review, verdict: 'revise' as const, findings: [...review.findings, `Completion refused (${gate.code}): ${gate.message}`] }
          : review
        return applyCompletionReview(task, { ...vetoed, evidenceSeqs: job.evidenceSeqs, cutoffSeq: job.cutoffSeq }, at)
      }
      case 'progress': return review.verdict === 'needs-user' ? pause(task, { reason: 'decision' }, at) : undefined
    }
  }

  /**
   * A reviewer turn that ended while its job is still requested. A reviewer that answered in text
   * gets one repair turn asking for the verdict tool; otherwise (or after that turn) the job fails
   * and the task pauses (review-fault), with a `review/fault` event coded REVIEW_FAULT.
   */
  private async onReviewerTurnEnd(agent: Agent, summary: TurnSummary) {
    const mainId = agent.session.parentId
    if (!mainId) return
    const main = await this.supervisor.resolve(mainId)
    const job = jobOfReviewer(await this.supervisor.state(main), agent.session.id)
    // Its review is over (the verdict was applied, or it failed): a reviewer serves one job, so its
    // agent goes (a host running many tasks would otherwise keep every reviewer it ever started).
    if (!job || job.status !== 'requested') return this.agents.release(agent.session.id)
    if (!summary.error && !summary.refused && !summary.cancelled && !this.repaired.has(job.jobId) && await this.answeredInText(agent.session)) {
      this.repaired.add(job.jobId)
      agent.followup(VERDICT_REPAIR_PROMPT, { origin: 'controller', jobId: job.jobId, verdictRepair: true })
      return
    }
    const why = summary.error ? `the reviewer failed (${summary.error.code}: ${summary.error.message})`
      : summary.refused ? `the reviewer was refused (${summary.refused.code})`
        : summary.cancelled ? 'the reviewer was stopped'
          : this.repaired.has(job.jobId) ? 'the reviewer did not record a verdict with review_verdict, even when asked again'
            : 'the reviewer ended its turn without a verdict'
    await this.fail(main, job, why)
    await this.agents.release(agent.session.id)
  }

  /**
   * Whether the reviewer's last turn ended with an assistant message (text instead of the tool). The
   * step's `model/usage` is recorded after its text, so it is looked past.
   */
  private async answeredInText(reviewer: Session) {
    const tail = await reviewer.read({ from: Math.max(0, reviewer.seq - 4), limit: 4 })
    const last = tail.findLast((event) => event.type !== 'model/usage')
    return last?.type === 'assistant/message'
  }

  /** Fail a still-requested job: the task pauses (review-fault) if it waited for it. Idempotent. */
  private async fail(main: Session, job: ReviewJob, why: string) {
    this.settle(job.jobId)
    let failedNow = false
    const task = await this.supervisor.transact(main, (state) => {
      const latest = state.reviews.find((r) => r.jobId === job.jobId)
      if (!latest || latest.status !== 'requested') return { records: [], result: undefined }
      failedNow = true
      const failed: ReviewJob = { ...latest, status: 'failed' }
      const records: RecordEnvelope[] = [reviewRecord(failed)]
      let next: Task | undefined
      if (isPendingJob(state, latest)) {
        next = pause(state.current, { reason: 'review-fault' }, { seq: main.seq + 1, time: Date.now() })
        records.push(taskStateEnvelope(next))
      }
      return { records, result: next }
    })
    if (!failedNow) return
    const fault = new TaskwardError('REVIEW_FAULT',
      `The ${job.kind} review ${job.jobId} failed: ${why}. The task is paused; /task resume runs the review again.`,
      { jobId: job.jobId, kind: job.kind })
    await main.append('review/fault', { code: fault.code, message: fault.message, jobId: job.jobId, kind: job.kind }).catch(() => {})
    if (task) {
      this.supervisor.controller.disarm(main.id)
      this.logger.warn('task %s paused: review %s failed: %s', task.id, job.jobId, why)
    }
  }

  private async jobFor(reviewerSession: Session) {
    const forbidden = () => new TaskwardError('FORBIDDEN',
      'Only a reviewer session working on a supervisor review job can use this tool.', { sessionId: reviewerSession.id })
    if (reviewerSession.role !== 'reviewer' || !reviewerSession.parentId) throw forbidden()
    const main = await this.supervisor.resolve(reviewerSession.parentId)
    const job = jobOfReviewer(await this.supervisor.state(main), reviewerSession.id)
    if (!job) throw forbidden()
    return { main, job }
  }

  private async createReviewer(main: Session): Promise<Agent> {
    // Written, not yet flushed, is enough: its first consequence is the reviewer's model request.
    return this.agents.create({ cwd: main.cwd, model: this.config.reviewerModel, role: 'reviewer', parentId: main.id, ack: 'written' })
  }

  private newJob(main: Session, reviewer: Agent, task: Task, kind: ReviewJob['kind'], jobId: string,
    options: { nodeId?: string, evidenceSeqs?: number[] }): ReviewJob {
    return {
      jobId,
      taskId: task.id,
      taskRevision: task.revision,
      kind,
      ...(options.nodeId ? { nodeId: options.nodeId } : {}),
      model: this.config.reviewerModel,
      reviewerSessionId: reviewer.session.id,
      evidenceSeqs: [...(options.evidenceSeqs ?? [])],
      // The reviewer reads the main log up to the event that asked for the review.
      cutoffSeq: Math.max(0, main.seq - 1),
      status: 'requested',
    }
  }
}

import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Session } from '@taskward/host'
import {
  citableEvidence, optional, reportStage, requestCompletion, reworkNode, startNode, submitPlan, TaskwardError, type Task, type TaskPlan,
} from '@taskward/protocol'
import { REVIEW_PAGE_LIMIT } from './reviews'
import type { Supervisor } from './service'

const nodeId = () => Schema.string().required()

/** How far back task_status looks for citable evidence (events). */
const EVIDENCE_WINDOW = 500

/** What a task tool answers: where the task stands now. */
function brief(task: Task, extra: Record<string, unknown> = {}) {
  return { taskId: task.id, revision: task.revision, phase: task.phase, ...extra }
}

/** Evidence for a node's attempt: existing main-session events after the attempt began. */
async function checkEvidence(session: Session, seqs: number[], after: number | undefined): Promise<number[]> {
  const unique = [...new Set(seqs)].sort((a, b) => a - b)
  for (const seq of unique) {
    if (!(await session.event(seq))) {
      throw new TaskwardError('TASK_INVALID', `Evidence seq ${seq} is not an event of this session; cite seqs from the log.`, { seq })
    }
    if (after !== undefined && seq <= after) {
      throw new TaskwardError('TASK_INVALID',
        `Evidence seq ${seq} predates this attempt (it began after seq ${after}); cite events of the current attempt.`, { seq, after })
    }
  }
  return unique
}

/** The main session a consultation works for (its parent, when that is a main session). */
async function consultedMain(ctx: Context, session: Session): Promise<Session | undefined> {
  if (!session.parentId) return
  const main = await ctx.sessions.get(session.parentId).catch(() => undefined)
  return main?.role === 'main' ? main : undefined
}

/** The main agent's task tools and the reviewer's two tools. */
export function registerTaskTools(ctx: Context, supervisor: Supervisor) {
  ctx.tools.register({
    name: 'task_submit_plan',
    recordsOnly: true,
    description: 'Submit the plan of the current task for review: acceptance criteria and nodes; a node without dependsOn '
      + 'depends on the previous node, dependsOn: [] makes it a root.',
    parameters: Schema.object({
      acceptanceCriteria: Schema.array(Schema.string()).required(),
      nodes: Schema.array(Schema.object({
        id: nodeId(),
        title: Schema.string().required(),
        dependsOn: optional(Schema.array(Schema.string())),
      })).required(),
    }),
    async execute(args: TaskPlan, { session }) {
      const plan: TaskPlan = {
        acceptanceCriteria: args.acceptanceCriteria,
        nodes: args.nodes.map((n) => ({ id: n.id, title: n.title, ...(n.dependsOn ? { dependsOn: n.dependsOn } : {}) })),
      }
      const { task, job } = await supervisor.reviews.request(session, 'plan', (t, jobId, at) => submitPlan(t, { plan, jobId }, at))
      return brief(task, { reviewJobId: job.jobId })
    },
  })

  ctx.tools.register({
    name: 'task_start_node',
    recordsOnly: true,
    description: 'Start a ready node of the approved plan (every dependency passed).',
    parameters: Schema.object({ nodeId: nodeId() }),
    async execute({ nodeId }: { nodeId: string }, { session }) {
      const task = await supervisor.apply(session, (t, at) => startNode(t, { nodeId }, at))
      return brief(task, { nodeId, attempt: task.nodeRuns[nodeId].attempt })
    },
  })

  ctx.tools.register({
    name: 'task_report_stage',
    recordsOnly: true,
    description: 'Report a running node as done; a reviewer checks it against the log. Cite evidence seqs of this attempt.',
    parameters: Schema.object({
      nodeId: nodeId(),
      summary: Schema.string(),
      evidenceSeqs: optional(Schema.array(Schema.natural())),
    }),
    async execute({ nodeId, summary, evidenceSeqs }: { nodeId: string, summary?: string, evidenceSeqs?: number[] }, { session }) {
      const run = (await supervisor.state(session)).current?.nodeRuns[nodeId]
      const evidence = await checkEvidence(session, evidenceSeqs ?? [], run?.evidenceAfterSeq)
      const { task, job } = await supervisor.reviews.request(session, 'stage',
        (t, jobId, at) => reportStage(t, { nodeId, jobId }, at), { nodeId, evidenceSeqs: evidence, note: summary })
      supervisor.controller.reported(session.id)
      return brief(task, { nodeId, reviewJobId: job.jobId })
    },
  })

  ctx.tools.register({
    name: 'task_rework_node',
    recordsOnly: true,
    description: 'Rework a started node: it and every node depending on it get a new pending attempt.',
    parameters: Schema.object({ nodeId: nodeId(), reason: Schema.string().required() }),
    async execute({ nodeId, reason }: { nodeId: string, reason: string }, { session }) {
      const before = (await supervisor.state(session)).current
      const task = await supervisor.apply(session, (t, at) => reworkNode(t, { nodeId, reason }, at))
      const reworked = Object.keys(task.nodeRuns).filter((id) => task.nodeRuns[id].attempt !== before?.nodeRuns[id]?.attempt)
      return brief(task, { reworked })
    },
  })

  ctx.tools.register({
    name: 'task_request_completion',
    recordsOnly: true,
    description: 'Ask for final acceptance once every node passed review; a completion reviewer decides.',
    parameters: Schema.object({ summary: Schema.string() }),
    async execute({ summary }: { summary?: string }, { session }) {
      const current = (await supervisor.state(session)).current
      // The pure precondition first (every node passed), then the gates (recovery's verdicts).
      requestCompletion(current, { jobId: 'precheck' }, { seq: session.seq, time: Date.now() })
      const refusal = await supervisor.completionRefusal(session, current!)
      if (refusal) throw refusal
      const { task, job } = await supervisor.reviews.request(session, 'completion',
        (t, jobId, at) => requestCompletion(t, { jobId }, at), { note: summary })
      return brief(task, { reviewJobId: job.jobId })
    },
  })

  ctx.tools.register({
    name: 'task_status',
    description: 'The current task, its nodes, ready nodes, reviews, repair proposals, history and what can happen next; '
      + 'while the task is complete also `evidence`: the newest main-session events a repair proposal can cite, with their seqs.',
    readOnly: true,
    parameters: Schema.object({}),
    async execute(_args, { session }) {
      // A consultation reads the task of the main session it works for: that is what it may propose a
      // repair of, and whose seqs its evidence cites.
      const main = session.role === 'consultation' ? await consultedMain(ctx, session) : session.role === 'main' ? session : undefined
      if (!main) return supervisor.status(session)
      const status = await supervisor.status(main)
      const scope = main === session ? {} : { mainSessionId: main.id }
      if (status.task?.phase !== 'complete') return { ...status, ...scope }
      // The model may not see seqs in its transcript (DSH shows none): name what it can cite.
      const events = await main.read({ from: Math.max(0, main.seq - EVIDENCE_WINDOW), limit: EVIDENCE_WINDOW })
      return { ...status, ...scope, evidence: citableEvidence(events) }
    },
  })

  ctx.tools.register({
    name: 'review_read_log',
    description: `Reviewer only: a page of the main session as its agent lived it (messages, tool calls, tool results; at most ${REVIEW_PAGE_LIMIT} `
      + 'entries, up to the review cutoff; `next` continues). A long field is cut with a marker naming the call that reads on ({from, limit: 1, offset}).',
    readOnly: true,
    parameters: Schema.object({
      from: Schema.natural().default(0),
      limit: Schema.natural().min(1).max(REVIEW_PAGE_LIMIT).default(50),
      offset: Schema.natural(),
    }),
    async execute({ from, limit, offset }: { from: number, limit: number, offset?: number }, { session }) {
      return supervisor.reviews.readLog(session, from, limit, offset)
    },
  })

  ctx.tools.register({
    name: 'review_verdict',
    recordsOnly: true,
    description: 'Reviewer only: answer the review once: pass, revise (with findings) or needs-user.',
    parameters: Schema.object({
      verdict: Schema.union(['pass', 'revise', 'needs-user']).required(),
      findings: Schema.array(Schema.string()).default([]),
      evidenceSeqs: Schema.array(Schema.natural()).default([]),
    }),
    async execute(args: { verdict: 'pass' | 'revise' | 'needs-user', findings: string[], evidenceSeqs: number[] }, { session }) {
      return supervisor.reviews.verdict(session, args)
    },
  })
}

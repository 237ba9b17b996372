import type { Context } from 'cordis'
import type { ModelRequest, ModelStep, Session } from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import { EventTypes, readyNodes, type Task } from '@taskward/protocol'
import { DEMO_FILES, DEMO_FINDINGS, DEMO_PLAN, DEMO_REPAIR } from './story'

/*
 * The scripted demo agent and reviewer. Each queued step is a function of the task as the supervisor
 * sees it at that moment (and of the previous step's results), so the demo follows the real
 * controller rather than a fixed transcript; the number of steps it queues is exact, so no step is
 * left behind for later sessions.
 */

/** Model calls of the main agent: plan (2), four nodes (3 each), completion (2), diagnosis (3). */
export const MAIN_STEPS = 2 + DEMO_PLAN.nodes.length * 3 + 2 + 3
/** Reviews: plan, one per node, completion. */
export const REVIEW_STEPS = 1 + DEMO_PLAN.nodes.length + 1

/** The seq of the `tool/result` event of `callId` (searching the last events of the session). */
async function resultSeq(session: Session, callId: string): Promise<number | undefined> {
  const events = await session.read({ from: Math.max(0, session.seq - 50), limit: 50 })
  return events.findLast((e) => e.type === EventTypes.toolResult && e.data?.callId === callId)?.seq
}

function firstStep(task: Task | undefined): ModelStep {
  if (!task) return {}
  switch (task.phase) {
    case 'planning':
      return { text: 'Planning the greeting library as four nodes.', toolCalls: [{ name: 'task_submit_plan', args: structuredClone(DEMO_PLAN) }] }
    case 'active': {
      const running = Object.entries(task.nodeRuns).find(([, run]) => run.status === 'running')?.[0]
      if (running) return { toolCalls: [{ name: 'write', args: DEMO_FILES[running] }] }
      const [next] = readyNodes(task)
      if (next) return { toolCalls: [{ name: 'task_start_node', args: { nodeId: next } }, { name: 'write', args: DEMO_FILES[next] }] }
      if (Object.values(task.nodeRuns).every((run) => run.status === 'passed')) {
        return { toolCalls: [{ name: 'task_request_completion', args: { summary: 'All four nodes passed review.' } }] }
      }
      return {}
    }
    case 'complete':
      return { text: 'Let me look at the English phrases.', toolCalls: [{ name: 'read', args: { path: DEMO_FILES.en.path } }] }
    default:
      return {}
  }
}

/** The main agent's policy for one model call. */
export function mainStep(ctx: Context) {
  return async (request: ModelRequest): Promise<ModelStep> => {
    const task = (await ctx.supervisor.state(request.session)).current
    if (request.step === 0) return firstStep(task)
    const last = request.results.at(-1)
    if (!last || last.error) return {}
    const seq = await resultSeq(request.session, last.callId)
    if (last.name === 'write' && task?.phase === 'active' && seq !== undefined) {
      const nodeId = Object.entries(DEMO_FILES).find(([, file]) => file.path === last.result?.path)?.[0]
      if (nodeId && task.nodeRuns[nodeId]?.status === 'running') {
        return { toolCalls: [{ name: 'task_report_stage', args: { nodeId, summary: `Wrote ${last.result.path}.`, evidenceSeqs: [seq] } }] }
      }
    }
    if (last.name === 'read' && task?.phase === 'complete' && seq !== undefined) {
      return {
        text: 'The file has no "!" — this is a defect within the original objective, so I propose a repair for your confirmation.',
        toolCalls: [{ name: 'task_propose_repair', args: { taskId: task.id, revision: task.revision, ...DEMO_REPAIR, evidenceSeqs: [seq] } }],
      }
    }
    if (last.name === 'task_propose_repair') return { text: 'The repair proposal waits for your decision in the console.' }
    return {}
  }
}

/** The reviewer's policy: read the log, then pass, citing what the agent cited. */
export function reviewerStep(ctx: Context) {
  return async (request: ModelRequest): Promise<ModelStep> => {
    const state = await ctx.supervisor.state(request.session.parentId)
    const job = state.reviews.findLast((j) => j.reviewerSessionId === request.session.id)
    if (!job) return {}
    return {
      toolCalls: [
        { name: 'review_read_log', args: { from: Math.max(0, job.cutoffSeq - 20), limit: 21 } },
        { name: 'review_verdict', args: { verdict: 'pass', findings: [DEMO_FINDINGS[job.kind]], evidenceSeqs: job.evidenceSeqs } },
      ],
    }
  }
}

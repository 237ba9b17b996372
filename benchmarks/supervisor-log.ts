/**
 * The main-session log the supervisor benchmarks fold: TASKS tasks that each run new → plan review →
 * approve → 3 nodes with stage reviews → completion, padded to EVENTS events with tool calls, results
 * and messages. Not a benchmark itself (no `.bench.ts`); shared by supervisor.bench.ts and scratch runs.
 */
import {
  applyCompletionReview, applyPlanReview, applyStageReview, approve, newTask, RECORD_EVENT_TYPE,
  reportStage, requestCompletion, reviewJobEnvelope, startNode, submitPlan, taskStateEnvelope,
  type RecordEnvelope, type ReviewJob, type SessionEvent, type Task, type TaskPlan,
} from '@taskward/protocol'

export const PLAN: TaskPlan = {
  acceptanceCriteria: ['parses', 'reports errors'],
  nodes: [{ id: 'a', title: 'tokenizer' }, { id: 'b', title: 'parser', dependsOn: ['a'] }, { id: 'c', title: 'tests', dependsOn: ['a', 'b'] }],
}

/** The log: real transitions and review jobs, padded to EVENTS events with ordinary events. */
export function buildSupervisorLog(EVENTS: number, TASKS: number): SessionEvent[] {
  const events: SessionEvent[] = []
  const push = (type: string, data: unknown) => events.push({ seq: events.length, type, time: 1_700_000_000_000 + events.length, data })
  const perTask = Math.floor(EVENTS / TASKS)
  let task: Task | undefined
  const at = (id?: string) => ({ seq: events.length, time: 1_700_000_000_000 + events.length, ...(id ? { id } : {}) })
  const record = (envelope: RecordEnvelope) => push(RECORD_EVENT_TYPE, envelope)
  const step = (next: Task) => { task = next; record(taskStateEnvelope(next)) }
  const job = (jobId: string, kind: ReviewJob['kind'], status: ReviewJob['status'], nodeId?: string) => record(reviewJobEnvelope({
    jobId, taskId: task!.id, taskRevision: task!.revision, kind, ...(nodeId ? { nodeId } : {}), model: 'scripted',
    reviewerSessionId: `rev-${jobId}`, evidenceSeqs: [events.length - 1], cutoffSeq: events.length - 1, status,
    ...(status === 'finished' ? { verdict: 'pass', findings: [] } : {}),
  } as ReviewJob, `${jobId}:${status}`))
  const pad = (n: number) => {
    for (let i = 0; i < n; i++) {
      const kind = i % 3
      if (kind === 0) push('tool/call', { callId: `c${events.length}`, name: 'read', args: { path: 'src/parser.ts' } })
      else if (kind === 1) push('tool/result', { callId: `c${events.length - 1}`, name: 'read', result: { path: 'src/parser.ts', content: 'export const parse = (s: string) => s.split(",")\n'.repeat(4) } })
      else push('assistant/message', { text: 'Reading the parser to see how lists are tokenized before changing anything.' })
    }
  }
  for (let t = 0; t < TASKS; t++) {
    const start = events.length
    push('user/message', { text: `/task new objective ${t}`, origin: 'user' })
    step(newTask(task, { objective: `objective ${t}` }, at(`task-${t}`)))
    step(submitPlan(task, { plan: PLAN, jobId: `p${t}` }, at()))
    job(`p${t}`, 'plan', 'requested')
    job(`p${t}`, 'plan', 'finished')
    step(applyPlanReview(task, { jobId: `p${t}`, verdict: 'pass', findings: [] }, at()))
    step(approve(task, at()))
    for (const node of PLAN.nodes) {
      step(startNode(task, { nodeId: node.id }, at()))
      pad(8)
      step(reportStage(task, { nodeId: node.id, jobId: `s${t}${node.id}` }, at()))
      job(`s${t}${node.id}`, 'stage', 'requested', node.id)
      job(`s${t}${node.id}`, 'stage', 'finished', node.id)
      step(applyStageReview(task, { jobId: `s${t}${node.id}`, verdict: 'pass', findings: [] }, at()))
    }
    step(requestCompletion(task, { jobId: `c${t}` }, at()))
    job(`c${t}`, 'completion', 'requested')
    job(`c${t}`, 'completion', 'finished')
    step(applyCompletionReview(task, { jobId: `c${t}`, verdict: 'pass', findings: [], evidenceSeqs: [events.length - 1], cutoffSeq: events.length - 1 }, at()))
    pad(Math.max(0, perTask - (events.length - start)))
  }
  pad(EVENTS - events.length)
  return events
}

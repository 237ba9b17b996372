import { readyNodes, type ReviewJob, type Task } from '@taskward/protocol'

/*
 * The text of controller turns: what the main agent should do next, and what a reviewer is asked.
 * Both are derived from the task alone, so a turn always names the state it was written for.
 */

const bullets = (lines: readonly string[]) => lines.map((line) => `- ${line}`).join('\n')

/** The next instruction for the main agent, or undefined when the next step is not the agent's. */
export function nextInstruction(task: Task | undefined, extra?: string): string | undefined {
  if (!task || !task.enabled) return
  const head = `Task ${task.id} (revision ${task.revision}): ${task.objective}`
  const tail = extra ? `\n\n${extra}` : ''
  if (task.phase === 'planning') {
    const feedback = task.planFeedback?.length
      ? `\nThe plan reviewer asked for:\n${bullets(task.planFeedback)}\nRevise the plan accordingly.`
      : ''
    return `${head}\nPlan the work: submit acceptance criteria and nodes (with dependsOn) with task_submit_plan.${feedback}${tail}`
  }
  if (task.phase !== 'active' || !task.plan) return
  const runs = task.nodeRuns
  const running = task.plan.nodes.filter((n) => runs[n.id]?.status === 'running')
  if (running.length) {
    return `${head}\nNode ${running.map((n) => `"${n.id}" (${n.title})`).join(', ')} is running: finish the work and report it `
      + `with task_report_stage, citing evidence seqs.${tail}`
  }
  const ready = readyNodes(task)
  if (ready.length) {
    const lines = ready.map((id) => {
      const node = task.plan!.nodes.find((n) => n.id === id)!
      const run = runs[id]
      const findings = run.status === 'needs-revision' && run.review?.findings.length ? ` — reviewer findings: ${run.review.findings.join('; ')}` : ''
      const rework = run.reworkReason ? ` — rework: ${run.reworkReason}` : ''
      return `"${id}" (${node.title}), attempt ${run.attempt}${findings}${rework}`
    })
    return `${head}\nReady nodes:\n${bullets(lines)}\nStart one with task_start_node, do the work, then report it with task_report_stage.${tail}`
  }
  if (task.plan.nodes.every((n) => runs[n.id]?.status === 'passed')) {
    const findings = task.completionReview?.verdict === 'revise' && task.completionReview.findings.length
      ? `\nThe completion reviewer asked for:\n${bullets(task.completionReview.findings)}\nRework the affected nodes with task_rework_node, or request completion again.`
      : ''
    return `${head}\nEvery node passed review: request final acceptance with task_request_completion.${findings}${tail}`
  }
}

const KIND_QUESTIONS: Record<ReviewJob['kind'], string> = {
  plan: 'Does the plan cover the objective? Are the acceptance criteria checkable and the nodes and dependencies complete? '
    + 'Answer revise with the omissions as findings.',
  stage: 'Did the node\'s work meet its title and the acceptance criteria it touches, judging by the evidence in the log?',
  completion: 'Is the objective met and does every acceptance criterion hold, judging by the evidence in the log?',
  progress: 'The agent has taken several turns without reporting a stage. Is it making progress toward the ready nodes? '
    + 'Answer revise with what it should do instead, or needs-user when only the user can unblock it.',
}

/** The reviewer's turn: what to review and how to answer. */
export function reviewerPrompt(job: ReviewJob, task: Task, note?: string): string {
  const plan = task.plan
    ? `Acceptance criteria:\n${bullets(task.plan.acceptanceCriteria)}\nNodes:\n${bullets(task.plan.nodes.map((n) =>
      `${n.id}: ${n.title}${n.dependsOn ? ` (depends on ${n.dependsOn.join(', ') || 'nothing'})` : ''}`))}`
    : 'No plan yet.'
  const after = job.nodeId ? task.nodeRuns[job.nodeId]?.evidenceAfterSeq : undefined
  const node = job.nodeId ? `\nNode under review: ${job.nodeId}.${after !== undefined ? ` Its attempt's work is logged after seq ${after}.` : ''}` : ''
  const evidence = job.evidenceSeqs.length ? `\nEvidence cited by the agent: seqs ${job.evidenceSeqs.join(', ')}.` : ''
  return [
    `You review a ${job.kind} of task ${task.id} (revision ${job.taskRevision}): ${task.objective}`,
    plan + node + evidence + (note ? `\nThe agent's summary: ${note}` : ''),
    KIND_QUESTIONS[job.kind],
    `Read the main session with review_read_log {from, limit} (its messages, tool calls and tool results, at most 200 a page, `
    + `up to seq ${job.cutoffSeq}; \`next\` continues, a cut field says how to read on) and the workspace's files with read, glob `
    + 'and grep, then answer once with review_verdict {verdict: pass | revise | needs-user, findings, evidenceSeqs}.',
  ].join('\n\n')
}

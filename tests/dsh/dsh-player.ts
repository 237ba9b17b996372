import type { MockReply, MockRequest, MockStream } from '@taskward/testkit'

/*
 * A stateless model for DSH turns (the loopback endpoint plays the main agent and the reviewers),
 * deciding from what DSH sends: DSH's system prompt carries no task state, so the main agent reads
 * it with task_status at every step and acts on that answer. Main agent: plan two nodes, start each
 * ready node, write `<node>.txt` with DSH's own write tool, report it, request completion. Reviewer
 * (its input is the supervisor's "You review a …" prompt): read the log, then pass. A tool error ends
 * the turn with a text answer (never a loop).
 */

export const TWO_NODE_PLAN = {
  acceptanceCriteria: ['each node writes its file'],
  nodes: [{ id: 'a', title: 'write a' }, { id: 'b', title: 'write b', dependsOn: ['a'] }],
}

const text = (value: string): MockStream => ({ text: value })
const call = (name: string, args: Record<string, unknown>): MockStream => ({ toolCalls: [{ name, args }] })

export function contentOf(message: any): string {
  if (typeof message?.content === 'string') return message.content
  if (Array.isArray(message?.content)) return message.content.map((part: any) => part?.text ?? '').join('')
  return ''
}

/** The messages of the current turn: after the last input that is neither a tool result nor DSH's runtime context. */
export function currentTurn(messages: any[]) {
  const start = messages.findLastIndex((m) => m.role === 'user' && !contentOf(m).startsWith('Current runtime context'))
  return { input: contentOf(messages[start]), turn: messages.slice(start + 1) }
}

/** The session workspace DSH names in its runtime-context message. */
function workspaceOf(messages: any[]) {
  return /session workspace: "([^"]+)"/.exec(messages.map(contentOf).join('\n'))?.[1] ?? '.'
}

/**
 * `reviewerTries`: a reviewer first tries DSH's own `write` (to `reviewer.txt`), as a hostile
 * reviewer would, then reviews as usual whatever that call answered. `reviewerReads`: a stage reviewer
 * also reads the node's file with DSH's own `read` before its verdict.
 */
export function dshTaskPlayer(options: { plan?: typeof TWO_NODE_PLAN, reviewerTries?: boolean, reviewerReads?: boolean } = {}) {
  const plan = options.plan ?? TWO_NODE_PLAN
  return (request: MockRequest): MockReply => {
    const messages: any[] = request.body.messages ?? []
    const { input, turn } = currentTurn(messages)
    const calls: string[] = turn.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []).map((c: any) => c.function.name)
    const results = turn.filter((m) => m.role === 'tool').map(contentOf)
    const last = results.at(-1)
    if (input.startsWith('You review a ')) {
      if (options.reviewerTries && !calls.includes('write')) return call('write', { file_path: `${workspaceOf(messages)}/reviewer.txt`, content: 'a reviewer wrote this\n' })
      // Read the main session from where the prompt says the node's attempt began, then the node's file.
      if (!calls.includes('review_read_log')) {
        const after = /logged after seq (\d+)/.exec(input)?.[1]
        return call('review_read_log', after ? { from: Number(after) + 1, limit: 50 } : { from: 0, limit: 200 })
      }
      const node = /Node under review: (\w+)\./.exec(input)?.[1]
      if (options.reviewerReads && node && !calls.includes('read')) return call('read', { file_path: `${workspaceOf(messages)}/${node}.txt` })
      return call('review_verdict', { verdict: 'pass', findings: [], evidenceSeqs: [] })
    }
    if (last !== undefined && /^Error\b|"code":\s*"[A-Z_]+"/.test(last) && !last.trimStart().startsWith('{\n  "nodes"')) {
      return text(`The tool failed (${last.slice(0, 120)}); stopping here.`)
    }

    // Every step starts from a fresh task_status.
    if (calls.at(-1) !== 'task_status') return call('task_status', {})
    let state: any
    try {
      state = JSON.parse(last ?? '')
    } catch {
      return text('task_status did not answer JSON; stopping.')
    }
    const before = calls.slice(0, -1)
    const phase = state?.task?.phase
    if (phase === 'planning') {
      return before.includes('task_submit_plan') ? text('Plan submitted for review.') : call('task_submit_plan', plan)
    }
    // Slowly (about 2 s): the review's verdict lands while this turn still runs, so only the
    // controller's turn-end continuation can carry the task on.
    if (phase === 'reviewing') return { text: 'Nothing for me to do while the task is reviewing.', chunkSize: 4, delayMs: 150 }
    // Asked to propose a repair of a complete task: read a.txt (the evidence), then propose citing the
    // seq task_status lists for that read — or, when the request names one ("citing seq N"), that seq.
    if (phase === 'complete' && input.startsWith('Propose a repair')) {
      if (before.includes('task_propose_repair')) return text('The repair is proposed; the user decides.')
      if (!before.includes('read')) return call('read', { file_path: `${workspaceOf(messages)}/a.txt` })
      const named = /citing seq (\d+)/.exec(input)?.[1]
      const read = (state.evidence ?? []).filter((e: any) => e.type === 'tool/result' && e.text.startsWith('read: ')).at(-1)
      if (!named && !read) return text('task_status lists no read I could cite; stopping.')
      return call('task_propose_repair', { title: 'a.txt is wrong', reason: 'a.txt says done but must say repaired', rootNodeIds: ['a'], evidenceSeqs: [named ? Number(named) : read.seq] })
    }
    if (phase !== 'active') return text(`Nothing for me to do while the task is ${phase ?? 'absent'}.`)
    const running = state.nodes.find((n: any) => n.status === 'running')
    if (running) {
      if (before.includes('write')) return call('task_report_stage', { nodeId: running.id, summary: `wrote ${running.id}.txt` })
      const file = `${workspaceOf(messages)}/${running.id}.txt`
      // A later attempt rewrites the file: DSH's write refuses to overwrite a file it has not read.
      if ((running.attempt ?? 1) > 1 && !before.includes('read')) return call('read', { file_path: file })
      return call('write', { file_path: file, content: (running.attempt ?? 1) > 1 ? `${running.id} repaired\n` : `${running.id} done\n` })
    }
    if (state.readyNodes?.length) return call('task_start_node', { nodeId: state.readyNodes[0] })
    if (state.nodes.length && state.nodes.every((n: any) => n.status === 'passed')) {
      return before.includes('task_request_completion') ? text('Completion requested.') : call('task_request_completion', { summary: 'every node passed' })
    }
    return text('Waiting for reviews.')
  }
}

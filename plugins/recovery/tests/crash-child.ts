/*
 * A host process for the crash fixture (not a test): boots on the parent's data directory, asks for
 * completion, and SIGKILLs itself right after the candidate-journal record of the given stage is durable
 * (stage `before-promotion`: right before the promotion's records are handed to the store, after its
 * checks ran and its decision was made; stage `stop`: right after a STOP decision record, before the pause that acts on it; stage
 * `review-stop`: the completion reviewer passes after editing README.md, the gate STOPs (pin_changed),
 * and the kill comes right after the task state record the verdict writes, still before the pause;
 * stage `budget-stop`: as `stop`, on a host whose maxAttempts is 1, so the completion request's attempt
 * is a budget STOP).
 * Usage: node --import tsx --conditions source crash-child.ts <dataDir> <sessionId> <stage>
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RECORD_EVENT_TYPE, RECOVERY_NAMESPACE, TASK_NAMESPACE } from '@taskward/protocol'
import { TestHost } from '@taskward/testkit'
import { plugins } from './fixtures'

const [dataDir, sessionId, stage] = process.argv.slice(2)
const host = await TestHost.boot({ plugins: plugins(stage === 'budget-stop' ? { budgets: { maxAttempts: 1 } } : {}), waitFor: ['workspace', 'supervisor', 'recovery'], dataDir })
let stopped = false
host.ctx.on('session/event', (_session, event) => {
  const data = event.data
  if (stage === 'review-stop' && event.type === RECORD_EVENT_TYPE) {
    if (data?.namespace === RECOVERY_NAMESPACE && data.kind === 'decision' && data.payload.action === 'STOP') stopped = true
    else if (stopped && data?.namespace === TASK_NAMESPACE) process.kill(process.pid, 'SIGKILL')
    return
  }
  if (event.type !== RECORD_EVENT_TYPE || data?.namespace !== RECOVERY_NAMESPACE) return
  if (stage === 'stop' || stage === 'budget-stop' ? data.kind === 'decision' && data.payload.action === 'STOP' : data.kind === 'candidate' && data.payload.stage === stage) {
    process.kill(process.pid, 'SIGKILL')
  }
})
const session = await host.ctx.sessions.get(sessionId)
if (stage === 'before-promotion') {
  // The promotion is one append (its journal records and its decision): die as it is about to start.
  const appendBatch = session.appendBatch
  session.appendBatch = function (this: typeof session, entries: any[], options?: any) {
    if (entries.some(({ data }: any) => data?.namespace === RECOVERY_NAMESPACE && data.kind === 'candidate' && data.payload.stage === 'proposed')) {
      process.kill(process.pid, 'SIGKILL')
    }
    return appendBatch.call(this, entries, options)
  } as typeof appendBatch
}
if (stage === 'review-stop') {
  host.scripted.script('reviewer', [() => {
    writeFileSync(join(session.cwd, 'README.md'), '# rewritten by someone during the review\n')
    return { toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: [], evidenceSeqs: [] } }] }
  }])
}
await host.ctx.tools.execute(session, 'task_request_completion', {}, { agentId: sessionId })
if (stage === 'review-stop') await new Promise((resolve) => setTimeout(resolve, 30_000))
// Reaching this line means the kill point never came.
process.exit(3)

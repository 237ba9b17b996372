/*
 * A host process for the crash fixture (not a test): boots on the parent's data directory, asks for
 * completion, and SIGKILLs itself right after the candidate-journal record of the given stage is durable
 * (stage `stop`: right after a STOP decision record, before the pause that acts on it).
 * Usage: node --import tsx --conditions source crash-child.ts <dataDir> <sessionId> <stage>
 */
import { RECORD_EVENT_TYPE, RECOVERY_NAMESPACE } from '@taskward/protocol'
import { TestHost } from '@taskward/testkit'
import { plugins } from './fixtures'

const [dataDir, sessionId, stage] = process.argv.slice(2)
const host = await TestHost.boot({ plugins: plugins(), waitFor: ['workspace', 'supervisor', 'recovery'], dataDir })
host.ctx.on('session/event', (_session, event) => {
  const data = event.data
  if (event.type !== RECORD_EVENT_TYPE || data?.namespace !== RECOVERY_NAMESPACE) return
  if (stage === 'stop' ? data.kind === 'decision' && data.payload.action === 'STOP' : data.kind === 'candidate' && data.payload.stage === stage) {
    process.kill(process.pid, 'SIGKILL')
  }
})
const session = await host.ctx.sessions.get(sessionId)
await host.ctx.tools.execute(session, 'task_request_completion', {}, { agentId: sessionId })
// Reaching this line means the kill point never came.
process.exit(3)

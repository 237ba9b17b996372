/**
 * Child process of tests/repair-crash.spec.ts: boots a host on the parent's data directory, confirms a
 * repair through the real plugin path and kills itself (SIGKILL) the moment the confirmation receipt is
 * committed, before the reopened state can be appended. No production code knows about this.
 * argv: dataDir sessionId proposalId taskId revision
 */
import { REPAIR_NAMESPACE } from '@taskward/protocol'
import { TestHost } from '@taskward/testkit'
import { repairPlugins } from '../plugins/repair/tests/fixtures'

const [dataDir, sessionId, proposalId, taskId, revision] = process.argv.slice(2)
const host = await TestHost.boot({ plugins: repairPlugins(), waitFor: ['supervisor', 'repair'], dataDir })
host.ctx.on('session/event', (_session, event) => {
  if (event.type === 'extension/record' && event.data?.namespace === REPAIR_NAMESPACE && event.data?.kind === 'confirm') {
    process.stdout.write(`receipt at seq ${event.seq}\n`)
    process.kill(process.pid, 'SIGKILL')
  }
})
await host.ctx.repair.confirm(sessionId, { proposalId, taskId, revision: Number(revision) })
// Reaching this line means the receipt was never written: the parent fails on the exit status.
process.exit(3)

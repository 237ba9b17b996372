/**
 * Child process of tests/repair-two-hosts.spec.ts: a real host with supervisor, workspace, admission,
 * repair and the web console and an HTTP server, on the MariaDB store of TASKWARD_TEST_MYSQL, driven by one command
 * per stdin line (see tests/host-process.ts):
 *   ready <pid> <url> <operatorToken>     (printed once booted)
 *   setup <cwd>  → a main session on cwd (this host takes its lease), a DIAMOND task driven to
 *                  complete, and a repair of node b proposed by the main agent:
 *                  `ok setup <sessionId> <proposalId> <taskId> <revision>`
 *   resume <sessionId> → agents.resume (takes or renews the lease, or refuses: `err resume LEASE_HELD …`)
 *   busy <sessionId> <ms> → opens a maintenance window of the main agent that lasts <ms> (answered
 *                  once it is open): a click waits behind it as behind a running turn
 *   takebusy <sessionId> <ms> → resume, then busy at once
 *   dispose      → stops the host (releases its leases) and exits
 * argv: leaseDuration renewInterval clickRelayTimeout
 */
import type { Agent } from '@taskward/host'
import { TestHost, mysqlTestConfig } from '@taskward/testkit'
import { RepairPlugin } from '../plugins/repair/src'
import { WebConsole } from '../plugins/console/src'
import { allIdle, completeDiamond, mainSession, proposeRepair, repairPlugins } from '../plugins/repair/tests/fixtures'
import { say, serveCommands } from './host-child'

const [leaseDuration, leaseRenewInterval, clickRelayTimeout] = process.argv.slice(2).map(Number)
const plugins = [
  ...repairPlugins().map(([plugin, config]): [any, any] => plugin === RepairPlugin ? [plugin, { ...config, clickRelayTimeout }] : [plugin, config]),
  [WebConsole, {}] as [any, any],
]
const host = await TestHost.boot({
  plugins,
  waitFor: ['supervisor', 'repair'],
  database: mysqlTestConfig(process.env.TASKWARD_TEST_MYSQL!),
  host: { agents: { leaseDuration, leaseRenewInterval } },
})
say(`ready ${process.pid} ${host.url} ${host.operatorToken}`)

/** Opens a maintenance window of `agent` lasting `ms`, answered once it is open. */
async function busy(agent: Agent | undefined, sessionId: string, ms: string) {
  if (!agent) throw new Error(`no live main agent for ${sessionId}`)
  const opened = new Promise<void>((resolve) => {
    void agent.runMaintenance(() => { resolve(); return new Promise((done) => setTimeout(done, Number(ms))) })
  })
  await opened
  say('ok busy')
}

await serveCommands(host, {
  async setup(cwd) {
    const session = await mainSession(host, cwd)
    await completeDiamond(host, session)
    await allIdle(host, session)
    const answer = await proposeRepair(host, session, ['b'])
    say(`ok setup ${session.id} ${answer.proposalId} ${answer.taskId} ${answer.revision}`)
  },
  async resume(sessionId) {
    await host.ctx.agents.resume(sessionId)
    say('ok resume')
  },
  busy: (sessionId, ms) => busy(host.ctx.supervisor.mainAgent(sessionId), sessionId, ms),
  // The window opens in the same tick as the resume ends, before anything can use the agent.
  takebusy: async (sessionId, ms) => busy(await host.ctx.agents.resume(sessionId), sessionId, ms),
})

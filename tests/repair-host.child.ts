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
import { createInterface } from 'node:readline'
import { TestHost, mysqlTestConfig } from '@taskward/testkit'
import { RepairPlugin } from '../plugins/repair/src'
import { WebConsole } from '../plugins/console/src'
import { allIdle, completeDiamond, mainSession, proposeRepair, repairPlugins } from '../plugins/repair/tests/fixtures'

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
const say = (line: string) => process.stdout.write(line.replace(/\n/g, ' ') + '\n')
say(`ready ${process.pid} ${host.url} ${host.operatorToken}`)

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg] = line.trim().split(' ')
  try {
    if (command === 'setup') {
      const session = await mainSession(host, arg)
      await completeDiamond(host, session)
      await allIdle(host, session)
      const answer = await proposeRepair(host, session, ['b'])
      say(`ok setup ${session.id} ${answer.proposalId} ${answer.taskId} ${answer.revision}`)
    } else if (command === 'resume') {
      await host.ctx.agents.resume(arg)
      say('ok resume')
    } else if (command === 'busy' || command === 'takebusy') {
      // takebusy: the window opens in the same tick as the resume ends, before anything can use the agent.
      const agent = command === 'busy' ? host.ctx.supervisor.mainAgent(arg) : await host.ctx.agents.resume(arg)
      if (!agent) throw new Error(`no live main agent for ${arg}`)
      const opened = new Promise<void>((resolve) => {
        void agent.runMaintenance(() => { resolve(); return new Promise((done) => setTimeout(done, Number(line.trim().split(' ')[2]))) })
      })
      await opened
      say('ok busy')
    } else if (command === 'dispose') {
      await host.dispose()
      say('ok dispose')
      process.exit(0)
    }
  } catch (error: any) {
    say(`err ${command} ${error?.code ?? 'UNCODED'} ${error?.message ?? error}`)
  }
}

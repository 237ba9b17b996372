/**
 * Child process of tests/lease-two-hosts.spec.ts: a real host on the MariaDB store of
 * TASKWARD_TEST_MYSQL, driven by one command per stdin line, answering one line each on stdout:
 *   create <sessionId> <cwd>  → a main session and its agent (takes the lease)
 *   resume <sessionId>        → agents.resume (takes or renews the lease, or refuses)
 *   append <sessionId> <tag>  → one `test/tick` event from this host
 *   dispose                   → stops the host (releases its leases) and exits
 * Answers: `ok <command> [seq]` or `err <command> <code> <message>`.
 * argv: leaseDuration renewInterval
 */
import { TestHost, mysqlTestConfig } from '@taskward/testkit'
import { say, serveCommands } from './host-child'

const [leaseDuration, leaseRenewInterval] = process.argv.slice(2).map(Number)
const host = await TestHost.boot({
  database: mysqlTestConfig(process.env.TASKWARD_TEST_MYSQL!),
  host: { agents: { leaseDuration, leaseRenewInterval } },
})
const { ctx } = host
say(`ready ${process.pid}`)

await serveCommands(host, {
  async create(id, cwd) {
    const session = await ctx.sessions.create({ id, cwd })
    await ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' })
    say('ok create')
  },
  async resume(id) {
    await ctx.agents.resume(id)
    say('ok resume')
  },
  async append(id, tag) {
    const event = await (await ctx.sessions.get(id)).append('test/tick', { host: process.pid, tag })
    say(`ok append ${event.seq}`)
  },
})

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
import { createInterface } from 'node:readline'
import { TestHost, mysqlTestConfig } from '@taskward/testkit'

const [leaseDuration, leaseRenewInterval] = process.argv.slice(2).map(Number)
const host = await TestHost.boot({
  database: mysqlTestConfig(process.env.TASKWARD_TEST_MYSQL!),
  host: { agents: { leaseDuration, leaseRenewInterval } },
})
const { ctx } = host
const say = (line: string) => process.stdout.write(line.replace(/\n/g, ' ') + '\n')
say(`ready ${process.pid}`)

for await (const line of createInterface({ input: process.stdin })) {
  const [command, id, arg] = line.trim().split(' ')
  try {
    if (command === 'create') {
      const session = await ctx.sessions.create({ id, cwd: arg })
      await ctx.agents.create({ sessionId: session.id, model: 'scripted', role: 'main' })
      say('ok create')
    } else if (command === 'resume') {
      await ctx.agents.resume(id)
      say('ok resume')
    } else if (command === 'append') {
      const event = await (await ctx.sessions.get(id)).append('test/tick', { host: process.pid, tag: arg })
      say(`ok append ${event.seq}`)
    } else if (command === 'dispose') {
      await host.dispose()
      say('ok dispose')
      process.exit(0)
    }
  } catch (error: any) {
    say(`err ${command} ${error?.code ?? 'UNCODED'} ${error?.message ?? error}`)
  }
}

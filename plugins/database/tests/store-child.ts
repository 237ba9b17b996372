/**
 * Child process of the store suites: boots a real host on the given data directory and appends to one
 * session as fast as it can, printing `acked <seq>` after each append resolves (the acknowledgement
 * the parent checks against after killing this process). Prints `ready <pid>` once the host runs.
 * argv: dataDir sessionId durability(fsync|os) mode(append|hold)
 */
import { TestHost } from '@taskward/testkit'

const [dataDir, sessionId, durability, mode] = process.argv.slice(2)
const host = await TestHost.boot({ dataDir, database: { driver: 'sqlite', path: `${dataDir}/taskward.db`, durability: durability as any } })
const { sessions } = host.ctx
const session = await sessions.has(sessionId) ? await sessions.get(sessionId) : await sessions.create({ id: sessionId, cwd: dataDir })
process.stdout.write(`ready ${process.pid} ${session.seq}\n`)
if (mode === 'append') {
  // Several appenders at once, so group commits and concurrent writes are exercised too.
  const writer = async (lane: number) => {
    for (let i = 0; ; i++) {
      const event = await session.append('test/tick', { lane, i, text: 'x'.repeat(200 + (i % 7) * 100) })
      process.stdout.write(`acked ${event.seq}\n`)
    }
  }
  await Promise.all([0, 1, 2].map(writer))
} else {
  setInterval(() => {}, 1 << 30)
}

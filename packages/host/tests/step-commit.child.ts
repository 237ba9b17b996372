/**
 * Child process of the step-commit crash suite: a real host on `dataDir` (SQLite, `fsync`) runs one
 * agent whose scripted model never stops — every step reports usage and calls `tick` twice, and each
 * call appends a record. Prints `acked <seq>` whenever a later step's guard runs (every step before it
 * was committed and flushed: everything up to that seq is acknowledged), and `in-tool <seq>` inside each
 * tool body (the step is half done) before the body waits `pauseMs`. With `effect` as third argument, the
 * second step also calls `touch`, which writes a file in the workspace (an effect outside the log) and
 * SIGKILLs the process right after.
 * argv: dataDir pauseMs [effect]
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { TestHost } from '@taskward/testkit'

const [dataDir, pause, mode] = process.argv.slice(2)
const pauseMs = Number(pause)
const host = await TestHost.boot({ dataDir, database: { driver: 'sqlite', path: `${dataDir}/taskward.db`, durability: 'fsync' }, host: { agents: { maxStepsPerTurn: 100_000 } } })
const { ctx } = host
ctx.tools.register({
  name: 'tick',
  description: 'Append a record, then wait a little.',
  recordsOnly: true,
  async execute(args: any, { session }) {
    await session.append('test/record', { n: args.n, text: 'x'.repeat(300) })
    process.stdout.write(`in-tool ${session.seq - 1}\n`)
    if (pauseMs) await new Promise((resolve) => setTimeout(resolve, pauseMs))
    return { ok: true }
  },
})
ctx.tools.register({
  name: 'touch',
  description: 'Write a file in the workspace, then die.',
  async execute(args: any) {
    writeFileSync(join(dataDir, 'touched.txt'), `step ${args.n}\n`)
    process.kill(process.pid, 'SIGKILL')
  },
})
// Before step k > 0 the steps before it are committed and flushed, and step k has staged nothing yet
// (the turn's message is staged with the first step, so the first guard acknowledges nothing).
let guards = 0
ctx.agents.stepGuard((agent) => {
  if (guards++) process.stdout.write(`acked ${agent.session.seq - 1}\n`)
})
const step = (n: number) => ({
  usage: { promptTokens: 100 + n, completionTokens: 10 },
  toolCalls: [{ name: 'tick', args: { n, call: 0 } }, { name: 'tick', args: { n, call: 1 } }, ...mode === 'effect' && n === 1 ? [{ name: 'touch', args: { n } }] : []],
})
ctx.models.scripted.script('main', Array.from({ length: 100_000 }, (_, n) => step(n)))
const agent = await ctx.agents.create({ cwd: dataDir, model: 'scripted' })
process.stdout.write(`ready ${process.pid} ${agent.session.id}\n`)
agent.followup('go')
setInterval(() => {}, 1 << 30)

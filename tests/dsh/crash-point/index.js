// Test-only DSH plugin, added to a test's DSH_HOME by tests/dsh/repair-crash.spec.ts (`dsh plugin add
// link:…`); the Taskward bundle knows nothing of it. It kills DSH (SIGKILL) at one crash point: a
// repair confirmation receipt (a carried `dsh-task-supervisor-repair` `confirm` record) is in the
// session's file on disk, and the reopened state is not. Once it fired it leaves a marker in DSH_HOME
// and never fires again (the restarted DSH must be able to take the second click).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'

export const name = 'taskward-test-crash-point'
export const inject = ['sessions']

const home = process.env.DSH_HOME
const marker = join(home, 'taskward-test-crash-point.fired')

/** The Taskward record a DSH event carries (adapters/dsh/src/carrier.ts), or undefined. */
function carried(event, sessionId) {
  const source = event?.type === 'agent/inbox/spliced' && event.data?.inserted?.length === 1 ? event.data.inserted[0].source : undefined
  return source?.kind === 'taskward.event' && source.session === sessionId ? source : undefined
}

const isReceipt = (source) => source?.type === 'extension/record' && source.data?.namespace === 'dsh-task-supervisor-repair' && source.data?.kind === 'confirm'

function sessionFile(id) {
  const find = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) => !e.isDirectory() ? [] : e.name === id ? [join(dir, e.name, 'session.jsonl.zstd')] : find(join(dir, e.name)))
  return find(join(home, 'sessions'))[0]
}

/** The seqs DSH has written to disk for `id` (a file caught mid-write reads as nothing yet). */
function seqsOnDisk(id) {
  try {
    const file = sessionFile(id)
    const lines = zstdDecompressSync(readFileSync(file)).toString('utf8').split('\n').filter(Boolean).slice(1)
    return new Set(lines.map((line) => JSON.parse(line).seq))
  } catch {
    return new Set()
  }
}

export function apply(ctx) {
  if (existsSync(marker)) return
  let armed
  ctx.on('session/event', (session, event) => {
    if (armed || existsSync(marker) || !isReceipt(carried(event, session.id))) return
    armed = { session, seq: event.seq }
    const timer = setInterval(() => {
      if (!seqsOnDisk(session.id).has(armed.seq)) return
      clearInterval(timer)
      // Carried after the receipt: any Taskward event the adapter appended since (the reopened state first).
      const after = session.events.slice(armed.seq + 1).filter((e) => carried(e, session.id)).map((e) => carried(e, session.id).data?.kind ?? carried(e, session.id).type)
      writeFileSync(marker, `${armed.seq}\n`)
      process.stdout.write(`taskward-crash-point: receipt at seq ${armed.seq} is on disk; carried after it in memory: ${after.length ? after.join(',') : 'nothing'}\n`, () => process.kill(process.pid, 'SIGKILL'))
    }, 2)
  })
  // A flush of that session (the adapter's append waits for one before it resolves) is held until the
  // kill: DSH's persistence, flushing beside this listener, puts the receipt on disk, and the writer of
  // the receipt cannot go on to the reopened state meanwhile. This only widens the window a real crash
  // can hit; it writes nothing.
  ctx.on('session/flush', (session) => armed && session.id === armed.session.id ? new Promise(() => {}) : undefined)
}

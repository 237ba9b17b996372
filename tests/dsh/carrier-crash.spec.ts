import { expect } from 'chai'
import type { OpenAIMock } from '@taskward/testkit'
import { CARRIER_KIND } from '@taskward/dsh'
import { PASSING_RECOVERY, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { carriedEvents, execute, replyJson, waitFor } from './dsh-api'
import { contentOf, dshTaskPlayer } from './dsh-player'

/*
 * A crash between a carrier's inserts and its removal (adapters/dsh/src/carrier.ts `writeCarried`):
 * DSH writes a batch as one zstd frame and, reading a torn final frame, keeps its whole lines
 * (dsh-session-persistence-jsonl `readZstdPrefix`), so a crash can keep the N inserts of a carrier
 * batch without the one removal after them. DSH then reopens the session with those messages still
 * queued in the agent's inbox. They must never reach the model, must not wake a turn, and the records
 * they carry must still be read.
 */

const CARRIER_TEXT = 'carried in the log, never sent to the model'

interface LogLine { type: string, seq: number, data: any }

/** Whether `line` is one carrier insert of `sessionId` (what readCarried reads). */
function isCarrierInsert(line: LogLine, sessionId: string) {
  const inserted = line.data?.inserted
  return line.type === 'agent/inbox/spliced' && Array.isArray(inserted) && inserted.length === 1
    && inserted[0]?.source?.kind === CARRIER_KIND && inserted[0].source.session === sessionId
}

/**
 * The index (in `lines`, the header first) of the last carrier removal of `sessionId`: a removal of k
 * messages right after k carrier inserts, with the number k.
 */
function lastCarrierRemoval(lines: string[], sessionId: string) {
  const events: LogLine[] = lines.map((line) => JSON.parse(line))
  for (let index = events.length - 1; index > 0; index--) {
    const { type, data } = events[index]
    if (type !== 'agent/inbox/spliced' || data?.inserted?.length !== 0 || !(data?.removedCount > 0)) continue
    const count: number = data.removedCount
    const batch = events.slice(index - count, index)
    if (batch.length === count && batch.every((line) => isCarrierInsert(line, sessionId))) return { index, count, batch }
  }
  return undefined
}

describe('carriers inside the real DSH host: a crash keeps a carrier batch\'s inserts, not its removal', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb
  let workspace: string

  useDsh({ player: dshTaskPlayer(), workspace: 'carrier-crash', config: PASSING_RECOVERY }, (dsh) => ({ model, home, web, workspace } = dsh))

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !web) return
    for (const r of model.requests.slice(-6)) {
      const ms: any[] = r.body.messages ?? []
      console.log('      model', ms.length, ms.slice(-4).map((m) => `${m.role}: ${JSON.stringify(m.content ?? m.tool_calls).slice(0, 160)}`).join(' | '))
    }
    console.log('      dsh output', web.output.slice(-3000))
  })

  const status = async (sessionId: string) => replyJson(await execute(web, sessionId, '/task status --json'))
  const history = (sessionId: string) => web.api('session.history', { sessionId })

  it('restarts with the kept carriers never sent to the model, no turn of their own, and their records read', async () => {
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => (await status(sessionId)).task?.phase === 'awaiting-approval', 'the plan review', 60_000)
    const before = carriedEvents(sessionId, await history(sessionId))
    const task = (await status(sessionId)).task
    await web.stop()

    // The crash: the log keeps every whole line before the last carrier removal.
    const lines = await home.readLog(sessionId)
    const cut = lastCarrierRemoval(lines, sessionId)
    expect(cut, 'a carrier removal in the main session\'s log').to.not.equal(undefined)
    const kept = cut!.batch.map((line) => line.seq)
    const cutSeq: number = JSON.parse(lines[cut!.index]).seq
    await home.writeLog(sessionId, lines.slice(0, cut!.index))
    // Every record was written before the cut (no carrier follows the last removal).
    expect(before.every((e) => e.seq < cutSeq)).to.equal(true)

    web = await home.start()
    const served = model.requests.length
    // The records the kept inserts carry are read back, with every other record, in place.
    const restored = carriedEvents(sessionId, await history(sessionId))
    expect(restored.filter((e) => e.seq < cutSeq)).to.deep.equal(before)
    expect(restored.map((e) => e.seq)).to.include.members(kept)
    expect((await status(sessionId)).task).to.include({ id: task.id, phase: task.phase, revision: task.revision })
    // No carrier is queued any more: a DSH user cannot edit one (its `source` kept, an edit would be a
    // second insert of the same record, read as a record written now).
    const carrierIds: string[] = cut!.batch.map((line) => line.data.inserted[0].id)
    const edit = await web.api('session.updateQueue', { sessionId, itemId: carrierIds[0], action: { kind: 'edit', content: [{ type: 'text', text: 'edited' }] } })
      .then(() => 'accepted', (error: Error) => error.message)
    expect(edit).to.include('queue-item-not-found')
    // The leftover carriers wake no turn.
    await new Promise((resolve) => setTimeout(resolve, 3000))
    expect(model.requests.length, 'no turn after the restart').to.equal(served)

    // The next turn: the model is sent the user's message, never a carrier.
    await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'How is the task going?' }] })
    await waitFor(() => model.requests.length >= served + 2, 'the turn (task_status, then an answer)', 60_000)
    await waitFor(async () => {
      const events: any[] = (await history(sessionId)).events.map((e: any) => e.event)
      return events.findLast((e) => e.type === 'turn/start' || e.type === 'turn/end')?.type === 'turn/end'
    }, 'the turn to end', 60_000)
    const sent = model.requests.slice(served).flatMap((r) => (r.body.messages ?? []) as any[])
    expect(sent.some((m) => contentOf(m) === 'How is the task going?'), 'the user message was sent').to.equal(true)
    const leaked = model.requests.flatMap((r) => (r.body.messages ?? []) as any[]).filter((m) => contentOf(m).includes(CARRIER_TEXT))
    expect(leaked.map(contentOf), 'carriers sent to the model').to.deep.equal([])
    const events: any[] = (await history(sessionId)).events.map((e: any) => e.event)
    const asUser = events.filter((e) => e.type === 'user/message' && JSON.stringify(e.data).includes(CARRIER_TEXT))
    expect(asUser, 'carriers logged as user messages').to.deep.equal([])
    // And still read after the turn, none of them inserted again.
    expect(carriedEvents(sessionId, await history(sessionId)).filter((e) => e.seq < cutSeq)).to.deep.equal(before)
    const again = events.filter((e) => e.seq >= cutSeq && e.type === 'agent/inbox/spliced' && (e.data.inserted ?? []).some((m: any) => carrierIds.includes(m.id)))
    expect(again, 'a kept carrier inserted again').to.deep.equal([])
  })
})

import type { Context } from 'cordis'
import { catchUpWithStore, storeDriver, type Agent } from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import type { SessionEvent } from '@taskward/protocol'
import { onDispose } from '@taskward/cordis-compat'

/*
 * Live updates as server-sent events: one-way is all the page needs (it refetches the view and
 * appends new events and streamed text to the transcript), the
 * browser's EventSource reconnects by itself, and it is a plain streamed Fetch Response, so it goes
 * through the host's connection (auth included) like every other route. A stream ends when the client
 * goes away (the host cancels the body) or the plugin is disposed; either way its listeners and timer
 * are removed.
 */

/**
 * MySQL/MariaDB: how often a stream reads the log's tail in the store. Other hosts sharing the store
 * append to the session (the driving host's turns, a reopen) and this host is told only of its own
 * appends; when the tail moved, the stream says `changed` and the page refetches the view, which
 * catches up (one `max(seq)` per open stream and interval; nothing on SQLite).
 */
export const STORE_TAIL_POLL_MS = 1000

/** Coalesce bursts of events (a transition appends several) into one message. */
const COALESCE_MS = 50

/** Events larger than this go out as `{seq, type, truncated: true}`: the page reads them from the log. */
export const LIVE_EVENT_MAX_CHARS = 64 * 1024

/**
 * Bytes a stream may hold for a client that does not read (a stalled network, a frozen tab) before it
 * is ended: the page's EventSource reconnects and reads what it missed from the log.
 */
export const LIVE_QUEUE_MAX_BYTES = 4 * 1024 * 1024

interface Stream {
  sessionId: string
  close(): void
}

export class LiveUpdates {
  private readonly streams = new Set<Stream>()

  constructor(private ctx: Context, private heartbeatMs: number) {
    onDispose(ctx, () => {
      for (const stream of [...this.streams]) stream.close()
    })
  }

  /** Streams open right now (for tests and the docs' "no leaked listeners" promise). */
  get size() {
    return this.streams.size
  }

  open(sessionId: string, initialSeq: number): Response {
    const encoder = new TextEncoder()
    const streams = this.streams
    let stream!: Stream
    let cleanup = () => {}
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        let closed = false
        let pending: ReturnType<typeof setTimeout> | undefined
        let lastSeq = initialSeq
        const send = (text: string) => {
          if (closed) return
          try {
            controller.enqueue(encoder.encode(text))
          } catch {
            cleanup()
            return
          }
          if ((controller.desiredSize ?? 0) < -LIVE_QUEUE_MAX_BYTES) stream.close()
        }
        const changed = (seq: number) => {
          lastSeq = Math.max(lastSeq, seq)
          pending ??= setTimeout(() => {
            pending = undefined
            send(`event: changed\ndata: ${JSON.stringify({ sessionId, seq: lastSeq })}\n\n`)
          }, COALESCE_MS)
        }
        const push = (event: SessionEvent) => {
          // Each event (the transcript), then a coalesced "changed" (the task view).
          const json = JSON.stringify(event)
          send(`event: event\ndata: ${json.length > LIVE_EVENT_MAX_CHARS ? JSON.stringify({ seq: event.seq, type: event.type, truncated: true }) : json}\n\n`)
          changed(event.seq)
        }
        // Events of a model step are staged until the step commits (docs/host.md, sessions): they go
        // out once durable, in order, and never when the commit was refused (their seqs are taken by
        // other events then) — the page must not show what a crash or a lost lease takes back.
        const waiting: { event: SessionEvent, durable: Promise<boolean> }[] = []
        const drain = async () => {
          while (waiting.length && !closed) {
            const durable = await waiting[0].durable
            const { event } = waiting.shift()!
            if (durable) push(event)
            else changed(event.seq)
          }
        }
        // An observer, not a `session/event` listener: a direct call on every append (see `sessions.observe`).
        const offEvent = this.ctx.sessions.observe((session, event) => {
          if (session.id !== sessionId) return
          const durable = session.whenDurable()
          if (!durable && !waiting.length) return push(event)
          waiting.push({ event, durable: durable ?? Promise.resolve(true) })
          if (waiting.length === 1) drain().catch(() => {})
        })
        // Streamed assistant text is never recorded piecewise: it exists only on this stream.
        const offDelta = this.ctx.on('agent/text-delta', (agent, delta) => {
          if (agent.id === sessionId) send(`event: delta\ndata: ${JSON.stringify({ delta })}\n\n`)
        })
        const queue = (agent: Agent) => {
          if (agent.id !== sessionId) return
          send(`event: queue\ndata: ${JSON.stringify({ state: agent.state, held: agent.held, items: agent.queuedTurns() })}\n\n`)
        }
        const offQueue = this.ctx.on('agent/queue', queue)
        const offState = this.ctx.on('agent/state', queue)
        const offChanged = this.ctx.on('supervisor/changed', (id, state) => {
          if (id === sessionId) changed(state.asOfSeq)
        })
        const heartbeat = setInterval(() => send(': keep-alive\n\n'), this.heartbeatMs)
        let reading = false
        const tail = typeof storeDriver(this.ctx)?.pool?.query === 'function' ? setInterval(() => {
          if (reading || closed) return
          reading = true
          this.ctx.sessions.get(sessionId).then(async (session) => {
            await catchUpWithStore(this.ctx, session)
            if (session.seq - 1 > lastSeq) changed(session.seq - 1)
          }).catch(() => {}).finally(() => { reading = false })
        }, STORE_TAIL_POLL_MS) : undefined
        cleanup = () => {
          if (closed) return
          closed = true
          offEvent()
          offDelta()
          offQueue()
          offState()
          offChanged()
          clearInterval(heartbeat)
          if (tail) clearInterval(tail)
          if (pending) clearTimeout(pending)
          streams.delete(stream)
        }
        stream = {
          sessionId,
          close: () => {
            if (closed) return
            cleanup()
            try {
              controller.close()
            } catch {}
          },
        }
        streams.add(stream)
        // `retry` tells EventSource how soon to reconnect; the first message lets the page know it is live.
        send(`retry: 2000\nevent: ready\ndata: ${JSON.stringify({ sessionId, seq: initialSeq })}\n\n`)
      },
      cancel: () => cleanup(),
    }, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }))
    return new Response(body, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      },
    })
  }
}

export function registerLiveUpdates(ctx: Context, live: LiveUpdates) {
  const handler = async (_request: Request, { params }: { params: Record<string, string> }) => {
    // Refuse unknown sessions before opening a stream (SESSION_NOT_FOUND → 404).
    const session = await ctx.sessions.get(params.sessionId)
    return live.open(session.id, session.seq - 1)
  }
  ctx.connection.register({ path: '/api/console/sessions/:sessionId/events', methods: ['GET'], access: 'operator', handler })
  // The same stream for clients holding that session's token (docs/host.md, "Operator routes"): the
  // connection checks the grant, and every message of a stream is filtered to its one session.
  ctx.connection.register({ path: '/api/sessions/:sessionId/stream', methods: ['GET'], access: 'session', handler })
}

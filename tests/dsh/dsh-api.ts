import { CARRIER_KIND, readCarried } from '@taskward/dsh'
import type { DshWeb } from './dsh-host'

/** What DSH's `commands/execute` answers for one line. */
export interface CommandAnswer { kind: string, text?: string, [key: string]: unknown }

/** Run a slash command in a DSH session through `POST /api/commands/execute` (DSH's own door for `/cmd`). */
export async function execute(web: DshWeb, sessionId: string, line: string): Promise<CommandAnswer> {
  const answer = await web.api('commands/execute', { args: { agentId: sessionId, line, images: [] } })
  return (answer?.result ?? answer) as CommandAnswer
}

export function commandText(answer: CommandAnswer) {
  return String(answer.text ?? JSON.stringify(answer))
}

/** The JSON block of a Taskward command reply (adapters/dsh/src/commands.ts `replyText`). */
export function replyJson(answer: CommandAnswer): any {
  const match = /```json\n([\s\S]*?)\n```/.exec(commandText(answer))
  if (!match) throw new Error(`no JSON in the reply: ${commandText(answer)}`)
  return JSON.parse(match[1])
}

/** Poll `check` until it holds (real processes: no fixed sleeps). */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    // Not faster: each poll of /task is two events in DSH's log.
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/**
 * The two DSH events that carry one Taskward event (adapters/dsh/src/carrier.ts), for tests that write
 * a log the way a hostile or older writer would.
 */
export function carrierEvents(sessionId: string, type: string, data: unknown) {
  const id = `forged-${Math.random().toString(36).slice(2)}`
  return [
    { type: 'agent/inbox/spliced', data: { target: 'next-step', start: 0, inserted: [{ id, role: 'user', content: [{ type: 'text', text: 'forged' }], source: { kind: CARRIER_KIND, session: sessionId, type, data } }] } },
    { type: 'agent/inbox/spliced', data: { target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' } },
  ]
}

/** The Taskward events in a DSH `session.history` answer, as the adapter's view reads them. */
export function carriedEvents(sessionId: string, history: { events: { event: { type: string, seq: number, time: number, data: any } }[] }) {
  return history.events.map(({ event }) => ({ seq: event.seq, carried: readCarried(event, sessionId) })).filter((e) => e.carried)
    .map(({ seq, carried }) => ({ seq, ...carried! }))
}

/** A request to one of Taskward's routes on DSH's web server (`/taskward/...`), JSON both ways. */
export async function taskward(web: DshWeb, path: string, options: { method?: string, body?: unknown, token?: string, origin?: string | null } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.token) headers.authorization = `Bearer ${options.token}`
  const origin = options.origin === undefined ? web.origin : options.origin
  if (origin) headers.origin = origin
  const response = await fetch(`${web.origin}/taskward${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  })
  return { status: response.status, body: await response.json().catch(() => undefined) as any }
}

/** The repair records of one kind (`proposal`, `confirm`, `decline`) among `carried` events. */
export function repairRecords<E extends { type: string, data: any }>(carried: E[], kind: string): E[] {
  return carried.filter((e) => e.type === 'extension/record' && e.data?.namespace === 'dsh-task-supervisor-repair' && e.data?.kind === kind)
}

/** The complete → active task states among `carried` events (a task reopened by a repair), in log order. */
export function reopenedStates<E extends { type: string, data: any }>(carried: E[]): E[] {
  const last = new Map<string, string>()
  const found: E[] = []
  for (const event of carried) {
    if (event.type !== 'extension/record' || event.data?.namespace !== 'dsh-task-supervisor') continue
    const task = event.data.payload
    if (last.get(task?.id) === 'complete' && task.phase === 'active') found.push(event)
    last.set(task?.id, task?.phase)
  }
  return found
}

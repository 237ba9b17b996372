import type { Context } from 'cordis'
import Schema from 'schemastery'
import { TaskwardError, httpStatusOf } from '@taskward/protocol'
import type { Operator } from './operator'
import { catchUpWithStore } from '../sessions/catch-up'

/*
 * The operator's controls over HTTP (docs/host.md, "Operator routes"). Bodies are validated by
 * schemastery schemas; a refusal is 400 BAD_REQUEST whose message starts with the field it is about.
 */

export const MAX_INPUT_CHARS = 100_000
export const EVENTS_PAGE_DEFAULT = 200
export const EVENTS_PAGE_MAX = 1000
/** A page ends early (with `next`) once its events pass this many characters of JSON; never empty. */
export const EVENTS_PAGE_MAX_CHARS = 8 * 1024 * 1024
/** Events read from the store at a time while a page is filled. */
const EVENTS_READ_CHUNK = 50

export const CreateSessionBody = Schema.object({
  cwd: Schema.string().required().description('Working directory, absolute or relative to the first workspace root.'),
  model: Schema.string().description('Model route; default operator.defaultModel.'),
  create: Schema.boolean().default(false).description('Create the directory when it does not exist.'),
})

export const InputBody = Schema.object({
  text: Schema.string().required().description('Chat text, or a slash command such as /task new <objective>.'),
})

/** Parse and validate a JSON body; schemastery's `$.field …` message becomes `field: …`. */
export async function parseBody<T>(request: Request, schema: Schema<any, T>): Promise<T> {
  const raw = await request.text()
  let value: unknown = {}
  if (raw.trim()) {
    try {
      value = JSON.parse(raw)
    } catch {
      throw new TaskwardError('BAD_REQUEST', 'body: not valid JSON.')
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new TaskwardError('BAD_REQUEST', 'body: send a JSON object.')
  try {
    return schema(value as any)
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const field = /^\$\.([\w.[\]]+)/.exec(message)?.[1]
    throw new TaskwardError('BAD_REQUEST', field ? `${field}: ${message.replace(/^\$\.[\w.[\]]+\s*/, '')}.` : `body: ${message}.`, field ? { field } : undefined)
  }
}

/** A non-negative integer query parameter (or its default). */
function natural(url: URL, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER) {
  const raw = url.searchParams.get(name)
  if (raw === null || raw === '') return fallback
  if (!/^\d{1,15}$/.test(raw)) throw new TaskwardError('BAD_REQUEST', `${name}: expected a non-negative integer, got "${raw.slice(0, 40)}".`, { field: name })
  const value = Number(raw)
  if (value > max) throw new TaskwardError('BAD_REQUEST', `${name}: at most ${max}.`, { field: name })
  return value
}

export function registerOperatorRoutes(ctx: Context, operator: Operator) {
  const connection = ctx.connection

  connection.register({
    path: '/api/operator',
    methods: ['GET'],
    access: 'operator',
    handler: async () => Response.json({
      workspaceRoots: await operator.workspaceRoots().catch(() => []),
      defaultModel: operator.config.defaultModel,
      models: ctx.models.routes(),
      commands: ctx.commands.list(),
    }),
  })

  connection.register({
    path: '/api/sessions',
    methods: ['POST'],
    access: 'operator',
    handler: async (request) => {
      const body = await parseBody(request, CreateSessionBody)
      const agent = await operator.createSession(body)
      return Response.json({ session: agent.session.toJSON(), agent: { model: agent.model, role: agent.role, state: agent.state } }, { status: 201 })
    },
  })

  connection.register({
    path: '/api/sessions/:sessionId',
    methods: ['GET'],
    handler: async (_request, { params }) => {
      const session = await ctx.sessions.get(params.sessionId)
      // Another host may have appended (MySQL/MariaDB): the seq shown is the log's, not this process's.
      await catchUpWithStore(ctx, session)
      const agent = ctx.agents.get(session.id)
      return Response.json({
        session: session.toJSON(),
        agent: agent ? { model: agent.model, role: agent.role, state: agent.state, live: true } : { model: session.model, role: session.role, live: false },
        usage: await operator.usage(session),
      }, { headers: { 'cache-control': 'no-store' } })
    },
  })

  connection.register({
    path: '/api/sessions/:sessionId/input',
    methods: ['POST'],
    handler: async (request, { params }) => {
      const { text } = await parseBody(request, InputBody)
      if (text.length > MAX_INPUT_CHARS) throw new TaskwardError('BAD_REQUEST', `text: at most ${MAX_INPUT_CHARS} characters.`, { field: 'text' })
      const session = await ctx.sessions.get(params.sessionId)
      const outcome = await operator.input(session, text)
      if (outcome.kind === 'queued') return Response.json(outcome, { status: 202 })
      const error = outcome.reply.error
      // A command's refusal is still its recorded reply: the body carries both, the status the code's.
      if (error) {
        const body = { ...outcome, error: error.message, code: error.code, ...(error.details !== undefined ? { details: error.details } : {}) }
        return Response.json(body, { status: httpStatusOf(error.code as any) })
      }
      return Response.json(outcome)
    },
  })

  connection.register({
    path: '/api/sessions/:sessionId/cancel',
    methods: ['POST'],
    handler: async (_request, { params }) => {
      const session = await ctx.sessions.get(params.sessionId)
      const { running, dropped } = await operator.cancel(session)
      return Response.json({ cancelled: running, dropped })
    },
  })

  connection.register({
    path: '/api/sessions/:sessionId/queue',
    methods: ['GET'],
    handler: async (_request, { params }) => {
      const session = await ctx.sessions.get(params.sessionId)
      return Response.json(operator.queue(session), { headers: { 'cache-control': 'no-store' } })
    },
  })

  connection.register({
    path: '/api/sessions/:sessionId/queue/:turnId',
    methods: ['DELETE'],
    handler: async (_request, { params }) => {
      const session = await ctx.sessions.get(params.sessionId)
      return Response.json({ removed: operator.removeQueued(session, params.turnId) })
    },
  })

  connection.register({
    path: '/api/sessions/:sessionId/events',
    methods: ['GET'],
    handler: async (_request, { params, url }) => {
      const from = natural(url, 'from', 0)
      const limit = natural(url, 'limit', EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX)
      const session = await ctx.sessions.get(params.sessionId)
      // Read in small chunks and stop at the size budget: a page of 1000 large events (file reads,
      // long answers) would otherwise be held whole in memory and sent as one huge answer.
      const events: Awaited<ReturnType<typeof session.read>>[number][] = []
      let chars = 0
      let next = from
      while (events.length < limit && chars < EVENTS_PAGE_MAX_CHARS) {
        const chunk = await session.read({ from: next, limit: Math.min(EVENTS_READ_CHUNK, limit - events.length) })
        if (!chunk.length) break
        for (const event of chunk) {
          const size = JSON.stringify(event).length
          if (events.length && chars + size > EVENTS_PAGE_MAX_CHARS) {
            chars = EVENTS_PAGE_MAX_CHARS
            break
          }
          events.push(event)
          chars += size
        }
        next = events.at(-1)!.seq + 1
      }
      const last = events.at(-1)
      return Response.json({
        events,
        // Where the next page starts; absent when this page reached the end of the log.
        ...(last && last.seq + 1 < session.seq ? { next: last.seq + 1 } : {}),
        seq: session.seq,
      }, { headers: { 'cache-control': 'no-store' } })
    },
  })
}

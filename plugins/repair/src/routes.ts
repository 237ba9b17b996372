import type { Context } from 'cordis'
import { defaultTitle, errorBody, httpStatusOf, TaskwardError, type RepairBinding } from '@taskward/protocol'
import type { RepairService } from './service'

type Body = Record<string, unknown>

function bad(message: string): TaskwardError {
  return new TaskwardError('BAD_REQUEST', message)
}

function text(body: Body, field: string): string {
  const value = body[field]
  if (typeof value !== 'string' || !value.trim()) throw bad(`"${field}" must be a non-empty string.`)
  return value
}

function revision(body: Body): number {
  const value = body.revision
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw bad('"revision" must be the positive task revision the page shows.')
  return value as number
}

function binding(body: Body): RepairBinding {
  return { proposalId: text(body, 'proposalId'), taskId: text(body, 'taskId'), revision: revision(body) }
}

async function readBody(request: Request): Promise<Body> {
  let body: unknown
  try {
    body = await request.json()
  } catch {
    throw bad('Send a JSON object with an "action" (confirm, decline or propose).')
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw bad('The body must be a JSON object.')
  return body as Body
}

/**
 * Coded refusals as `{error, code, details?}`: the host's error body plus the details the console
 * shows (e.g. `activeTaskId` of `ACTIVE_TASK_CONFLICT`). Anything else goes to the host's handler.
 */
function refusals(handler: (request: Request, params: Record<string, string>) => Promise<Response>) {
  return async (request: Request, { params }: { params: Record<string, string> }) => {
    try {
      return await handler(request, params)
    } catch (error) {
      if (!TaskwardError.is(error)) throw error
      return Response.json(errorBody(error), { status: httpStatusOf(error.code) })
    }
  }
}

/**
 * `GET /api/sessions/:sessionId/repairs` and `POST /api/sessions/:sessionId/repair` (actions confirm,
 * decline, propose), as specified in docs/repair.md. Session access: the operator token or that
 * session's token; errors are `{error, code}` with the code's status.
 */
export function registerRepairRoutes(ctx: Context, service: RepairService) {
  ctx.connection.register({
    path: '/api/sessions/:sessionId/repairs',
    methods: ['GET'],
    handler: refusals(async (_request, params) => Response.json(await service.view(params.sessionId))),
  })

  ctx.connection.register({
    path: '/api/sessions/:sessionId/repair',
    methods: ['POST'],
    handler: refusals(async (request, params) => {
      const body = await readBody(request)
      const sessionId = params.sessionId
      switch (body.action) {
        case 'confirm':
          return Response.json({ ok: true, ...await service.confirm(sessionId, binding(body)) })
        case 'decline':
          return Response.json({ ok: true, ...await service.decline(sessionId, binding(body)) })
        case 'propose': {
          const roots = body.rootNodeIds
          if (!Array.isArray(roots) || roots.some((id) => typeof id !== 'string')) throw bad('"rootNodeIds" must be an array of node ids.')
          const reason = text(body, 'reason')
          if (body.title !== undefined && typeof body.title !== 'string') throw bad('"title" must be a string when given.')
          const title = typeof body.title === 'string' && body.title.trim() ? body.title : defaultTitle(reason)
          const { outcome, proposal } = await service.propose(sessionId, {
            taskId: text(body, 'taskId'), revision: revision(body), title, reason, rootNodeIds: roots as string[],
            evidenceSeqs: [], source: 'user',
          })
          return Response.json({ ok: true, outcome, proposalId: proposal.id })
        }
        default:
          throw bad('"action" must be "confirm", "decline" or "propose".')
      }
    }),
  })
}

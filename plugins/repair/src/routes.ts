import type { Context } from 'cordis'
// From schemastery, not cordis: DSH's cordis 4 does not re-export it.
import Schema from 'schemastery'
import { defaultTitle, repairOutcomeText, TaskwardError, type RepairBinding, type RepairOutcomeFacts } from '@taskward/protocol'
import type { RepairService } from './service'

/** A string with at least one non-blank character. */
const text = () => Schema.string().pattern(/\S/)

const ACTIONS = ['confirm', 'decline', 'propose'] as const

/** What each field must be, in the words a caller needs (the schema's own message is appended). */
const HINTS: Record<string, string> = {
  action: '"action" must be "confirm", "decline" or "propose".',
  proposalId: '"proposalId" must be the id of the proposal the page shows (a non-empty string).',
  taskId: '"taskId" must be the id of the task the page shows (a non-empty string).',
  revision: '"revision" must be the positive task revision the page shows.',
  reason: '"reason" must say what is wrong (a non-empty string).',
  title: '"title" must be a string when given.',
  rootNodeIds: '"rootNodeIds" must be an array of node ids.',
}

const ActionBody = Schema.object({ action: Schema.union([...ACTIONS]).required() })

/** The binding a console click sends with confirm and decline. */
const BindingBody: Schema<RepairBinding> = Schema.object({
  proposalId: text().required(),
  taskId: text().required(),
  revision: Schema.natural().min(1).required(),
})

/** A user's proposal from the console. */
const ProposeBody = Schema.object({
  taskId: text().required(),
  revision: Schema.natural().min(1).required(),
  reason: text().required(),
  title: Schema.string(),
  rootNodeIds: Schema.array(Schema.string()).required(),
})

/** Validate `body` with `schema`; a failure is `BAD_REQUEST` naming the field (`details.field`, `details.path`). */
function validate<T>(schema: Schema<any, T>, body: unknown): T {
  try {
    return schema(body as any)
  } catch (error) {
    const path: (string | number)[] = (error as { options?: { path?: (string | number)[] } }).options?.path ?? []
    const field = typeof path[0] === 'string' ? path[0] : undefined
    const why = (error as Error).message
    throw new TaskwardError('BAD_REQUEST', field ? `${HINTS[field] ?? `"${field}" is not valid.`} (${why})` : `The body is not valid: ${why}.`,
      field ? { field, path } : undefined)
  }
}

async function readBody(request: Request): Promise<Record<string, unknown>> {
  let body: unknown
  try {
    body = await request.json()
  } catch {
    throw new TaskwardError('BAD_REQUEST', 'Send a JSON object with an "action" (confirm, decline or propose).')
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new TaskwardError('BAD_REQUEST', 'The body must be a JSON object.')
  return body as Record<string, unknown>
}

/** A repair click's answer: its facts and, for every renderer alike, what it did in words (`message`). */
function answer<T extends RepairOutcomeFacts>(facts: T) {
  return Response.json({ ok: true, ...facts, message: repairOutcomeText(facts) })
}

/**
 * `GET /api/sessions/:sessionId/repairs` and `POST /api/sessions/:sessionId/repair` (actions confirm,
 * decline, propose), as specified in docs/repair.md. Session access: the operator token or that
 * session's token. Bodies are checked by schemastery schemas (`BAD_REQUEST` naming the field); refusals
 * are the host's `{error, code, details?}` with the code's status.
 */
export function registerRepairRoutes(ctx: Context, service: RepairService) {
  ctx.connection.register({
    path: '/api/sessions/:sessionId/repairs',
    methods: ['GET'],
    handler: async (_request, { params }) => Response.json(await service.view(params.sessionId)),
  })

  ctx.connection.register({
    path: '/api/sessions/:sessionId/repair',
    methods: ['POST'],
    handler: async (request, { params }) => {
      const body = await readBody(request)
      const sessionId = params.sessionId
      const { action } = validate(ActionBody, body)
      switch (action) {
        case 'confirm':
          return answer(await service.confirm(sessionId, validate(BindingBody, body)))
        case 'decline':
          return answer(await service.decline(sessionId, validate(BindingBody, body)))
        case 'propose': {
          const { taskId, revision, reason, title, rootNodeIds } = validate(ProposeBody, body)
          const { outcome, proposal } = await service.propose(sessionId, {
            taskId, revision, title: title?.trim() ? title : defaultTitle(reason), reason, rootNodeIds, evidenceSeqs: [], source: 'user',
          })
          return answer({ outcome, proposalId: proposal.id })
        }
      }
    },
  })
}

import type { Context } from 'cordis'
import type {} from 'minato'

/** Rows the host keeps in `database`. Events are the source of truth; the rest is derived or metadata. */
export interface SessionRow {
  id: string
  cwd: string
  preset: string
  /** The session this one works for (a reviewer or consultation session), or ''. */
  parentId: string
  /** What the session's agent is: 'main', 'reviewer', 'consultation', ... */
  role: string
  /** The model route its agent uses, or '' when no agent was created. */
  model: string
  createdAt: number
}

export interface EventRow {
  sessionId: string
  seq: number
  type: string
  time: number
  data: any
}

export interface ProjectionRow {
  sessionId: string
  key: string
  version: number
  asOfSeq: number
  state: any
}

/** Which host drives a session's agent (MySQL/MariaDB only; see sessions/lease.ts). */
export interface LeaseRow {
  sessionId: string
  /** pid@hostname, start time and nonce of the holding host. */
  holder: string
  /** When the lease lapses, in ms on the store's clock. */
  expiresAt: number
  /** Grows on every take: appends carry it, and a former holder's token no longer matches. */
  token: number
}

declare module 'minato' {
  interface Tables {
    taskward_lease: LeaseRow
    taskward_session: SessionRow
    taskward_event: EventRow
    taskward_projection: ProjectionRow
  }
}

export function defineTables(ctx: Context) {
  ctx.database.extend('taskward_session', {
    id: 'string',
    cwd: 'text',
    preset: 'string',
    parentId: 'string',
    role: 'string',
    model: 'string',
    createdAt: 'double',
  }, { primary: 'id' })
  ctx.database.extend('taskward_event', {
    sessionId: 'string',
    seq: 'unsigned',
    type: 'string',
    time: 'double',
    data: 'json',
  }, {
    primary: ['sessionId', 'seq'],
    // Folds that read only the event types they fold.
    indexes: [{ name: 'taskward_event_type', keys: { sessionId: 'asc', type: 'asc', seq: 'asc' } }],
  })
  ctx.database.extend('taskward_lease', {
    sessionId: 'string',
    holder: 'string',
    expiresAt: 'double',
    token: 'unsigned',
  }, { primary: 'sessionId' })
  ctx.database.extend('taskward_projection', {
    sessionId: 'string',
    key: 'string',
    version: 'unsigned',
    asOfSeq: 'integer',
    state: 'json',
  }, { primary: ['sessionId', 'key'] })
}

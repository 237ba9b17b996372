import type { Context } from 'cordis'
import { TaskwardError } from '@taskward/protocol'
import type { TokenStore } from '../connection/tokens'
import { diagnose } from './doctor'
import { errorResponse } from '../connection/http'

/** `/health?verbose`: the doctor's findings, for the operator only (they name paths and sessions). */
export async function verboseHealth(ctx: Context, request: Request, tokens: TokenStore) {
  const header = request.headers.get('authorization') ?? ''
  const cookie = /(?:^|;\s*)taskward_token=([^;]+)/.exec(request.headers.get('cookie') ?? '')?.[1]
  const grant = tokens.verify(header.startsWith('Bearer ') ? header.slice(7).trim() : cookie && decodeURIComponent(cookie))
  if (grant?.kind !== 'operator') return errorResponse(new TaskwardError('UNAUTHORIZED', '/health?verbose needs the operator token (plain /health needs none).'))
  const findings = await diagnose(ctx)
  const ok = findings.every((finding) => finding.verdict !== 'fail')
  return Response.json({ ok, findings }, { status: ok ? 200 : 503 })
}

import type { Context as KoaContext } from 'koa'
import { Readable } from 'node:stream'
import { TaskwardError, errorBody, httpStatusOf } from '@taskward/protocol'

const MAX_BODY_BYTES = 1 << 20

/** Read the raw request body (bounded), so that the handler gets an untouched Fetch `Request`. */
export async function readBody(koa: KoaContext): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of koa.req) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) throw new TaskwardError('BAD_REQUEST', `The request body is larger than ${MAX_BODY_BYTES} bytes.`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

export function toRequest(koa: KoaContext, body: Buffer | undefined): Request {
  const headers = new Headers()
  for (const [key, value] of Object.entries(koa.request.headers)) {
    if (Array.isArray(value)) value.forEach((v) => headers.append(key, v))
    else if (value !== undefined) headers.set(key, value)
  }
  return new Request(koa.request.href, {
    method: koa.method,
    headers,
    body: body?.length ? body : undefined,
  })
}

export async function sendResponse(koa: KoaContext, response: Response) {
  koa.status = response.status
  response.headers.forEach((value, key) => {
    if (key === 'set-cookie') return
    koa.set(key, value)
  })
  const cookies = response.headers.getSetCookie?.() ?? []
  if (cookies.length) koa.set('set-cookie', cookies)
  if (!response.body) {
    // Koa turns a null body into 204 unless the status is set after it (303 redirects, 200s).
    koa.body = null
    koa.status = response.status
    return
  }
  const type = response.headers.get('content-type') ?? ''
  if (type.startsWith('text/event-stream')) {
    // Stream without buffering; Koa must not touch it.
    koa.req.socket.setTimeout(0)
    koa.body = Readable.fromWeb(response.body as any)
    return
  }
  koa.body = Buffer.from(await response.arrayBuffer())
}

export function errorResponse(error: TaskwardError) {
  return Response.json(errorBody(error), { status: httpStatusOf(error.code) })
}

import { STEP_HEADER } from './transport'
import { TEXT_TOKENS_SOURCE } from './tokens'

/**
 * The whole program of a model route's thread (worker-transport.ts starts it and speaks to it): the
 * official SDK sending the requests the host's thread laid out, and the route's encoding counting what a
 * layout left uncounted. Evaluated as a script (no module resolution, no tsx): the SDK and the encoding
 * are passed in by absolute path. Chunks and ends are sent in batches, one postMessage per turn of the
 * thread's loop: an endpoint streaming a token per chunk costs the host one message per turn, not one per token.
 */
export const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { OpenAI, APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError } = require(workerData.openai)
const { route, bodyChars, windowChars } = workerData
const requests = new Map()
const refusals = new Map()
let outbox = []
const flush = () => {
  const batch = outbox
  outbox = []
  parentPort.postMessage(batch)
}
const send = (entry) => {
  if (outbox.length === 0) setImmediate(flush)
  outbox.push(entry)
}
const text = (args) => args.map((value) => {
  if (typeof value === 'string') return value
  if (value instanceof Error) return value.message
  try { return JSON.stringify(value) } catch { return String(value) }
}).join(' ')
// What the SDK prints past its logger (an SSE event it cannot parse, raw, key and all) goes to the host's
// log like its logger's lines, scrubbed there: the thread's own stderr would reach the process's as is.
for (const name of ['error', 'warn', 'log', 'info', 'debug', 'trace']) console[name] = (...args) => send({ log: name === 'debug' || name === 'trace' ? 'debug' : 'warn', text: text(args) })
// The route's encoding, loaded as the thread starts (the host's thread loads its own meanwhile; a
// thread's first request waits the few hundred ms it takes — loaded later, it would stall the streams
// of the requests then in flight, whose cancels then come late): what a layout left uncounted is
// counted here once its request is sent, with the host's own counting code.
const countTexts = (() => {
  if (!workerData.tokenizer) return undefined
  try {
    const { countTokens } = require(workerData.tokenizer.path)
    const plain = { disallowedSpecial: new Set() }
    const encoder = (text) => countTokens(text, plain)
    const textTokens = ${TEXT_TOKENS_SOURCE}
    return (texts) => texts.map((text) => textTokens(encoder, text, workerData.tokenizer.exact))
  } catch (error) {
    send({ log: 'warn', text: "the route's thread could not load its tokenizer (" + (error && error.message) + "); the host's thread counts instead" })
    return undefined
  }
})()
const client = new OpenAI({
  apiKey: route.apiKey, baseURL: route.baseURL, timeout: route.timeoutMs, maxRetries: route.maxRetries, logLevel: 'info',
  fetch: async (url, init) => {
    const headers = init && init.headers
    let id
    if (headers instanceof Headers) { id = headers.get(${JSON.stringify(STEP_HEADER)}); headers.delete(${JSON.stringify(STEP_HEADER)}) }
    else if (headers && typeof headers === 'object') { id = headers[${JSON.stringify(STEP_HEADER)}]; delete headers[${JSON.stringify(STEP_HEADER)}] }
    const response = await fetch(url, init)
    // The latest attempt's: a refusal that a retry then passed is not what a later failure said.
    if (id && !response.ok) refusals.set(id, (await response.clone().text().catch(() => '')).slice(0, bodyChars))
    else if (id) refusals.delete(id)
    return response
  },
  logger: {
    error: (...args) => send({ log: 'warn', text: text(args) }),
    warn: (...args) => send({ log: 'warn', text: text(args) }),
    info: (...args) => send({ log: 'debug', text: text(args) }),
    debug: () => {},
  },
})
const shape = (error) => {
  if (error instanceof APIUserAbortError) return { kind: 'abort' }
  if (error instanceof APIConnectionError) return { kind: 'connection', message: error.message, timeout: error instanceof APIConnectionTimeoutError }
  if (error instanceof APIError) {
    let body
    try { body = error.error === undefined ? undefined : JSON.stringify(error.error) } catch { body = undefined }
    return { kind: 'status', status: error.status, error: body, message: error.message, headers: error.headers ? [...error.headers] : undefined }
  }
  return { kind: 'other', name: String((error && error.name) || 'Error'), message: String(error && error.message !== undefined ? error.message : error) }
}
const run = async (id, body, count) => {
  const request = { controller: new AbortController(), ahead: 0, resume: undefined }
  requests.set(id, request)
  const step = String(id)
  try {
    // The body as the host serialized it: what chat.completions.create sends, without the thread
    // parsing it into objects and serializing them again (each request's whole window, twice, in garbage).
    const stream = await client.post('/chat/completions', {
      body, stream: true, signal: request.controller.signal, headers: { 'content-type': 'application/json', ${JSON.stringify(STEP_HEADER)}: step },
    })
    send({ id, opened: true })
    // After the endpoint has the request: counting delays none of it. A text that cannot be counted
    // sends nothing (the host's thread counts them all then).
    if (count && countTexts) {
      try {
        send({ id, counts: countTexts(count) })
      } catch {}
    }
    for await (const chunk of stream) {
      // Inside the request's own try: a chunk too deep to serialize fails this request, not the thread.
      const text = JSON.stringify(chunk)
      send({ id, chunk: text })
      request.ahead += text.length
      while (request.ahead > windowChars && !request.controller.signal.aborted) await new Promise((resolve) => { request.resume = resolve })
    }
    send({ id, done: true })
  } catch (error) {
    send({ id, error: shape(error), refused: refusals.get(step) })
  } finally {
    requests.delete(id)
    refusals.delete(step)
  }
}
const wake = (request) => {
  const resume = request.resume
  request.resume = undefined
  if (resume) resume()
}
parentPort.on('message', (message) => {
  const request = requests.get(message.id)
  if (message.abort) {
    if (request) { request.controller.abort(); wake(request) }
  } else if (message.read !== undefined) {
    if (request) { request.ahead -= message.read; wake(request) }
  } else run(message.id, message.body, message.count)
})
`

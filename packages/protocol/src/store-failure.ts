import { TaskwardError } from './errors'

/*
 * Which errors of a store's client library mean "the store is not reachable or not usable right now"
 * — a dropped or killed connection, a server that refuses the login, a lock held too long — as
 * opposed to a bad statement or a constraint. Read from the errors' own fields (`code`, `errno`,
 * `fatal`), never from their messages. Such a failure is `STORE_UNAVAILABLE` (HTTP 503): the request
 * can be made again once the store is back.
 */

/** mysql/mysql2 client codes for a connection that is gone or cannot be made. */
const CONNECTION_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR', 'PROTOCOL_ENQUEUE_AFTER_QUIT', 'PROTOCOL_ENQUEUE_HANDSHAKE_TWICE',
  'PROTOCOL_SEQUENCE_TIMEOUT', 'POOL_CLOSED', 'POOL_ENQUEUELIMIT', 'POOL_CONNLIMIT',
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
])

/**
 * MySQL/MariaDB server errors that say the server or this account cannot serve now: too many
 * connections (1040), access denied to the database or the login (1044, 1045), shutdown (1053),
 * table access denied (1142, 1143), lock wait timeout (1205), query interrupted (1317), connection
 * killed (1927, MariaDB), gone away / lost (2006, 2013), account locked (3118 MySQL, 4151 MariaDB).
 */
const SERVER_ERRNOS = new Set([1040, 1044, 1045, 1053, 1142, 1143, 1205, 1317, 1927, 2006, 2013, 3118, 4151])

/**
 * Failures that can come after the statement reached the store: the connection dropped, reset or
 * timed out while the answer was awaited (2013 lost during a query, 2006 gone away, 1927 killed), or
 * an I/O error under the engine. The statement may have taken effect (the row may be in the log):
 * its outcome is unknown, and repeating it blindly can do it twice. Only a connection that could not
 * be made or was refused (ECONNREFUSED, a refused login, a closed pool, too many connections) or a
 * statement the server refused whole (lock wait timeout, interrupted) means "not done".
 */
const OUTCOME_UNKNOWN_CODES = new Set(['PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'])
const OUTCOME_UNKNOWN_ERRNOS = new Set([1927, 2006, 2013])
const SQLITE_OUTCOME_UNKNOWN = /^SQLITE_IOERR(?:_|$)/

/** SQLite result codes (the primary code in `code`, as node drivers name them) of a store not usable now. */
const SQLITE_UNAVAILABLE = /^SQLITE_(?:BUSY|LOCKED|CANTOPEN|IOERR|READONLY|FULL|PROTOCOL|PERM)(?:_|$)/

interface ClientError {
  code?: unknown
  errno?: unknown
  fatal?: unknown
  message?: unknown
}

/** The client error's own code, for the details (`cause`). */
function causeOf(error: ClientError): string | undefined {
  if (typeof error.code === 'string' && error.code !== 'UNKNOWN_CODE_PLEASE_REPORT') return error.code
  if (typeof error.errno === 'number') return `errno ${error.errno}`
  return typeof error.code === 'string' ? error.code : undefined
}

/** Whether a client library's error means the store is unavailable now (see above). */
export function isStoreUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false
  const { code, errno, fatal } = error as ClientError
  if (TaskwardError.is(error)) return error.code === 'STORE_UNAVAILABLE'
  if (fatal === true) return true
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || SQLITE_UNAVAILABLE.test(code))) return true
  return typeof errno === 'number' && SERVER_ERRNOS.has(errno)
}

/**
 * What a store-unavailable failure says about the statement it ended: `not-done` (it never ran, or the
 * server refused it whole) or `unknown` (it may have taken effect; see OUTCOME_UNKNOWN_CODES). A
 * fatal error with no code known to be harmless is `unknown`.
 */
export function storeFailureOutcome(error: unknown): 'not-done' | 'unknown' {
  const { code, errno, fatal } = (error ?? {}) as ClientError
  if (typeof code === 'string' && (OUTCOME_UNKNOWN_CODES.has(code) || SQLITE_OUTCOME_UNKNOWN.test(code))) return 'unknown'
  if (typeof errno === 'number' && OUTCOME_UNKNOWN_ERRNOS.has(errno)) return 'unknown'
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || SQLITE_UNAVAILABLE.test(code))) return 'not-done'
  if (typeof errno === 'number' && SERVER_ERRNOS.has(errno)) return 'not-done'
  return fatal === true ? 'unknown' : 'not-done'
}

/**
 * `error` as `STORE_UNAVAILABLE` naming `store` (e.g. "MySQL/MariaDB at 127.0.0.1:3306") when it is a
 * store-unavailable failure (`isStoreUnavailable`); any other error is returned as it is.
 * `details.outcome` says whether the request may be made again as it is (`not-done`) or must be
 * checked first (`unknown`: the statement may have taken effect).
 */
export function storeUnavailable(error: unknown, store: string): unknown {
  if (TaskwardError.is(error) || !isStoreUnavailable(error)) return error
  const client = error as ClientError
  const cause = causeOf(client)
  const said = String(client.message ?? cause ?? 'no answer')
  const outcome = storeFailureOutcome(error)
  const next = outcome === 'unknown'
    ? 'The connection was lost after the request was sent, so whether it took effect is unknown: once the store answers '
      + '(GET /health says when), look whether it did (the session\'s events, the task\'s state) before making it again.'
    : 'This request did not complete; make it again once the store answers (GET /health says when).'
  return new TaskwardError('STORE_UNAVAILABLE', `The store (${store}) is not available: ${said}. ${next}`,
    { store, ...cause ? { cause } : {}, said, outcome })
}

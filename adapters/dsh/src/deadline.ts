import { TaskwardError } from '@taskward/protocol'

/*
 * DSH's store work Taskward waits on — `sessions.flush` (an append is acknowledged once durable) and
 * bringing a stored session back (`sessionPersistence.inspect` + `agents.resume`) — can hang (a hung
 * disk, a storage plugin that lost a promise). Each wait is bounded: past `storeDeadlineMs` (the row's
 * config, default STORE_DEADLINE_MS) it ends with STORE_UNAVAILABLE naming the session, so a hung store
 * never holds the session's appends, clicks and commands for ever. The work itself is not cancelled
 * (DSH has no way to): a later request waits on it again, for its own deadline.
 */

/** Default of `storeDeadlineMs`. rc.8 writes behind in 200 ms batches; a resume reads and replays one log. */
export const STORE_DEADLINE_MS = 30_000

/** `work`, or STORE_UNAVAILABLE naming `sessionId` once `deadlineMs` passed (or when `work` fails, with `failed`). */
export async function storeDeadline<T>(work: Promise<T>, options: {
  sessionId: string
  deadlineMs: number
  /** What was waited for, for the message: "DSH's flush", "DSH's resume". */
  what: string
  /** The message of the coded error (what may be lost, what to do). */
  advice: string
  /** Whether a failure of `work` (not only the deadline) is STORE_UNAVAILABLE too; otherwise it is rethrown. */
  codeFailures?: boolean
}): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed(`${options.what} did not finish within ${options.deadlineMs} ms (storeDeadlineMs)`)), options.deadlineMs)
  })
  try {
    return await Promise.race([work, late])
  } catch (error) {
    if (!(error instanceof DeadlinePassed) && !options.codeFailures) throw error
    const why = (error as Error)?.message ?? String(error)
    throw new TaskwardError('STORE_UNAVAILABLE', options.advice.replace('{why}', () => why), { sessionId: options.sessionId })
  } finally {
    clearTimeout(timer)
  }
}

class DeadlinePassed extends Error {}

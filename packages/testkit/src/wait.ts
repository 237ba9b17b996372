/** Default of `waitFor`'s `timeout`. */
export const WAIT_TIMEOUT_MS = 5000

export interface WaitOptions {
  /** Give up after this many ms (default `WAIT_TIMEOUT_MS`, 5 s) and reject with "timed out waiting for <what>". */
  timeout?: number
  /** What is awaited, for the error message. */
  what?: string
  /** Poll interval in ms (default 5). */
  interval?: number
}

/**
 * Poll `check` until it returns true (reviews, continuations and listeners run asynchronously). Rejects
 * after `timeout` ms; an error thrown by `check` rejects at once.
 */
export async function waitFor(check: () => Promise<boolean> | boolean, options: WaitOptions = {}): Promise<void> {
  const { timeout = WAIT_TIMEOUT_MS, what = 'condition', interval = 5 } = options
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out after ${timeout} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, interval))
  }
}

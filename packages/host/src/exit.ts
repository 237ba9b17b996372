import type { Context } from 'cordis'

/**
 * How long the host's `exit` work (saving projection caches, releasing leases) may take. The cordis CLI
 * ends the process on SIGINT/SIGTERM only once every `exit` listener settled, so a write the store never
 * answers (a table locked by another client, a server frozen or partitioned mid-query) would otherwise
 * keep Ctrl-C from ending the host. Past it the work is given up: caches are folded again at the next
 * start, and a lease not released lapses after `agents.leaseDuration`.
 */
export const EXIT_WORK_TIMEOUT_MS = 5000

/** Run `work` on `exit`, waited for at most `EXIT_WORK_TIMEOUT_MS`; a failure or the time-out is logged. */
export function onExit(ctx: Context, what: string, log: { warn(format: string, ...args: unknown[]): void }, work: () => Promise<unknown>) {
  ctx.on('exit' as any, () => {
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        log.warn('%s took longer than %d ms at exit (the store does not answer); exiting without it', what, EXIT_WORK_TIMEOUT_MS)
        resolve()
      }, EXIT_WORK_TIMEOUT_MS)
    })
    const done = work().catch((error) => log.warn('%s at exit failed: %s', what, error?.message ?? error))
    return Promise.race([done, expired]).finally(() => clearTimeout(timer))
  })
}

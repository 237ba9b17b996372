import { delimiter, isAbsolute } from 'node:path'

/** A check's PATH when the host has none, or none absolute (never empty: execvp reads that as the cwd). */
export const CHECK_DEFAULT_PATH = ['/usr/bin', '/bin'].join(delimiter)

/**
 * The PATH a recovery check gets, and every lookup made for one (the plugin's, the doctor's): the
 * absolute entries of `hostPath` (the host's PATH), else `CHECK_DEFAULT_PATH`. A relative entry would be
 * resolved by the check in its copy of the candidate.
 */
export function checkSearchPath(hostPath: string | undefined): string {
  const kept = (hostPath ?? CHECK_DEFAULT_PATH).split(delimiter).filter((entry) => isAbsolute(entry))
  return kept.length ? kept.join(delimiter) : CHECK_DEFAULT_PATH
}

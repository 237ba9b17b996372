import { TaskwardError } from '@taskward/protocol'

/** Errors a walk turns into codes. The `path` in messages is relative to the root (`.` is the root). */

export function abortedError(): TaskwardError {
  return new TaskwardError('ABORTED', 'The workspace stamp was cancelled before it finished; start it again to get a stamp.')
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortedError()
}

/** Why a stamp saw a change; `details.reason` of `ARTIFACT_CHANGED`. */
export type ChangeReason =
  | 'vanished' | 'replaced' | 'modified-during-read' | 'directory-changed' | 'captures-differ' | 'root-replaced'

export function changedError(path: string, reason: ChangeReason, what: string, details: Record<string, unknown> = {}): TaskwardError {
  return new TaskwardError('ARTIFACT_CHANGED',
    `${path === '.' ? 'The workspace' : path} changed while the workspace was being stamped (${what}). Wait until nothing writes to the workspace, then stamp it again.`,
    { path, reason, ...details })
}

export function unsupportedError(path: string, type: string): TaskwardError {
  return new TaskwardError('ARTIFACT_UNSUPPORTED',
    `${path} is a ${type}; workspace stamps record only regular files, directories and symbolic links (as links, never followed). Remove it from the workspace, then stamp again.`,
    { path, type })
}

export function unavailableError(path: string, reason: string, cause?: unknown,
  next = 'Check that it exists and that this process may read it, then stamp again.'): TaskwardError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  return new TaskwardError('ARTIFACT_UNAVAILABLE',
    `${path} cannot be stamped (${reason}${code ? `, ${code}` : ''}). ${next}`,
    { path, reason, ...(code ? { errno: code } : {}) })
}

/**
 * An error from the filesystem while touching an entry that was just listed: one that vanished or was
 * replaced has changed; anything else (permissions, I/O) makes it unavailable.
 */
export function entryFsError(path: string, operation: string, error: unknown): unknown {
  // Only system errors are translated; anything else (a failing progress callback) passes through.
  if (error instanceof TaskwardError || !isSystemError(error)) return error
  const code = error.code
  switch (code) {
    case 'ENOENT':
      return changedError(path, 'vanished', `it disappeared before it could be ${operation}`)
    case 'ENOTDIR':
    case 'EISDIR':
    case 'ELOOP':
    case 'ENXIO':
    case 'EAGAIN':
    case 'ESPIPE':
    case 'EINVAL': // readlink of an entry that is no longer a link
      return changedError(path, 'replaced', `it was replaced by another kind of entry before it could be ${operation}`, { errno: code })
    default:
      return unavailableError(path, `it could not be ${operation}`, error)
  }
}

function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string' && typeof (error as NodeJS.ErrnoException).syscall === 'string'
}

/** What an `lstat` mode is, for the entries a stamp refuses. */
export function specialTypeOf(stats: { isSymbolicLink(): boolean, isFIFO(): boolean, isSocket(): boolean, isBlockDevice(): boolean, isCharacterDevice(): boolean }): string {
  if (stats.isSymbolicLink()) return 'symbolic link'
  if (stats.isFIFO()) return 'FIFO (named pipe)'
  if (stats.isSocket()) return 'socket'
  if (stats.isBlockDevice()) return 'block device'
  if (stats.isCharacterDevice()) return 'character device'
  return 'special file'
}

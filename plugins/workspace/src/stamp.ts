import { lstatSync, realpathSync, type BigIntStats } from 'node:fs'
import { TaskwardError, workspaceKeyOf, type DependencyMatcher, type StampLimits, type StampOptions, type WorkspaceStamp } from '@taskward/protocol'
import { captureTree, type CapturePart, type CaptureResult, type PartReading } from './capture'
import { changedError, throwIfAborted, unavailableError } from './fs-errors'
import { CaptureHashes, type StatCacheStore } from './stat-cache'

interface Root {
  real: Buffer
  stats: BigIntStats
  key: string
}

/**
 * Resolve the root to its real path and identity. Missing, not a directory, or unreadable is
 * `ARTIFACT_UNAVAILABLE`: there is no workspace to stamp. Synchronous like the walk (see pacer.ts): a
 * thread-pool round trip waits behind whatever holds the pool (fsyncs, a slow disk) and, on a busy
 * host, for the event loop; at 50 concurrent tasks a stamp of two files took 47 ms p50, 321 ms p90.
 */
function openRoot(root: string): Root {
  if (typeof root !== 'string' || !root) {
    throw new TaskwardError('ARTIFACT_UNAVAILABLE',
      'No workspace directory is bound, so there is nothing to stamp. Give the session a working directory, then try again.',
      { path: root ?? null, reason: 'no-root' })
  }
  let real: Buffer
  let stats: BigIntStats
  try {
    real = realpathSync.native(root, { encoding: 'buffer' })
    stats = lstatSync(real, { bigint: true })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'it does not exist' : code === 'ENOTDIR' ? 'a part of its path is not a directory' : 'it could not be resolved'
    throw unavailableError(root, reason, error)
  }
  if (!stats.isDirectory()) throw unavailableError(root, 'it is not a directory', undefined, 'Stamp the workspace directory instead.')
  return { real, stats, key: workspaceKeyOf({ realPath: real, dev: stats.dev, ino: stats.ino }) }
}

/** Errors from inside a capture name paths relative to the root; say which root and which capture. */
function inCapture(root: string, capture: 1 | 2, error: unknown): unknown {
  if (!(error instanceof TaskwardError) || error.code === 'ABORTED') return error
  return new TaskwardError(error.code, `In workspace ${root}: ${error.message}`, { ...error.details, root, capture })
}

async function capturing<T>(root: string, capture: 1 | 2, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw inCapture(root, capture, error)
  }
}

function sameCapture(a: CaptureResult, b: CaptureResult) {
  return a.digest === b.digest && a.entries === b.entries && a.files === b.files && a.bytes === b.bytes && a.links === b.links
    && a.dependencies.entries === b.dependencies.entries && a.dependencies.files === b.dependencies.files
    && a.dependencies.bytes === b.dependencies.bytes && a.dependencies.links === b.dependencies.links
}

function summary(capture: CaptureResult) {
  return { digest: capture.digest, entries: capture.entries, files: capture.files, bytes: capture.bytes, links: capture.links, dependencies: capture.dependencies }
}

/** How a stamp walks, beyond its limits: which directories are dependency directories, and the stat cache. */
export interface StampContext {
  dependencies?: DependencyMatcher
  cache?: StatCacheStore
}

/**
 * Capture the tree twice and return the stamp when both captures agree; if anything changed in
 * between (or while a file was read) the stamp fails with `ARTIFACT_CHANGED` and is not retried.
 * With a `cache`, a file whose version (device, inode, mode, size, mtime, ctime) is unchanged since
 * the last capture that read it is not read again; one whose timestamps are recent is (see
 * `hashOutlivesRead`), in both captures.
 */
export async function stampWorkspace(root: string, limits: StampLimits, options: StampOptions = {}, context: StampContext = {}): Promise<WorkspaceStamp> {
  const { signal, onProgress, exclude } = options
  const { dependencies, cache } = context
  throwIfAborted(signal)
  const before = openRoot(root)
  const firstHashes = cache ? new CaptureHashes(cache.table(before.key)) : undefined
  const first = await capturing(root, 1, () => captureTree(before.real, before.stats, { capture: 1, limits, signal, onProgress, exclude, dependencies, hashes: firstHashes }))
  const secondHashes = firstHashes ? new CaptureHashes(firstHashes.next) : undefined
  const second = await capturing(root, 2, () => captureTree(before.real, before.stats, {
    capture: 2, limits, signal, onProgress, exclude, dependencies, hashes: secondHashes, expected: { entries: first.entries, bytes: first.bytes },
  }))
  throwIfAborted(signal)
  const after = openRoot(root)
  if (after.key !== before.key) {
    throw inCapture(root, 2, changedError('.', 'root-replaced', 'the root directory was replaced by another directory'))
  }
  if (!sameCapture(first, second)) {
    throw inCapture(root, 2, changedError('.', 'captures-differ', 'the second capture differs from the first', {
      first: summary(first),
      second: summary(second),
    }))
  }
  // The second capture's table: every file of the tree as it is now whose hash can be reused.
  if (cache && secondHashes && (firstHashes!.changed || secondHashes.changed)) void cache.save(before.key, secondHashes.next)
  return { workspaceKey: before.key, digest: first.digest, files: first.files, bytes: first.bytes, links: first.links, dependencies: first.dependencies }
}

export interface ReadOptions extends Pick<StampOptions, 'signal' | 'exclude'> {
  /** false: hash every file, and keep nothing (a directory read once, such as a copy). */
  cache?: boolean
}

/** One capture of a workspace (`readWorkspace`): its key, the stamp digest (part `all`) and the part digests. */
export interface WorkspaceReading {
  workspaceKey: string
  /** The stamp digest, as `stampWorkspace` would give it for an unchanged tree (part `all` only). */
  digest?: string
  /** The digests of what lies outside dependency directories (parts `all` and `own`). */
  own?: PartReading
  /** The digests of what lies inside dependency directories (parts `all` and `dependencies`). */
  dependencies?: PartReading
}

/**
 * ONE capture of `root` (not a stamp: nothing tells whether the tree changed while it was read) — for a
 * caller that reads again and compares, as recovery does around a check: the whole tree with its part
 * digests, or only one part. Errors as `stampWorkspace`'s, from capture 1.
 */
export async function readWorkspace(root: string, limits: StampLimits, part: CapturePart, options: ReadOptions = {},
  context: StampContext = {}): Promise<WorkspaceReading> {
  const { signal, exclude } = options
  const { dependencies } = context
  // A copy of a workspace (recovery's check area) is read once: its table would only crowd the others out.
  const cache = options.cache === false ? undefined : context.cache
  throwIfAborted(signal)
  const opened = openRoot(root)
  const hashes = cache ? new CaptureHashes(cache.table(opened.key)) : undefined
  const capture = await capturing(root, 1, () => captureTree(opened.real, opened.stats, {
    capture: 1, limits, signal, exclude, dependencies, hashes, part, partDigests: true,
  }))
  // Only a whole reading knows every file of the tree: a part's table would drop the other part's hashes.
  if (cache && hashes && part === 'all' && hashes.changed) void cache.save(opened.key, hashes.next)
  return { workspaceKey: opened.key, ...part === 'all' ? { digest: capture.digest } : {}, ...capture.parts }
}

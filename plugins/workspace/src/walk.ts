import { lstatSync, readdirSync, readlinkSync, type BigIntStats } from 'node:fs'
import { StampBudget, versionChanges, walkOrder, type DependencyMatcher } from '@taskward/protocol'
import { changedError, entryFsError, specialTypeOf, unsupportedError } from './fs-errors'
import { versionOf } from './version'

/** One entry the walk found, in walk order. */
export interface WalkEntry {
  kind: 'directory' | 'file' | 'link'
  /** Path relative to the root, `/`-separated, in the filesystem's bytes: what the digest frames. */
  rel: Buffer
  /** `rel` decoded for messages and progress (decoded when asked: most entries never need it). */
  readonly path: string
  abs: Buffer
  stats: BigIntStats
  /** Whether it lies in a dependency directory (or is one). */
  dependency: boolean
  /** A link's target, as the link holds it (never followed). */
  target?: Buffer
}

interface OpenDirectory {
  abs: Buffer
  rel: Buffer
  names: Buffer[]
  next: number
  dependency: boolean
}

const SLASH = Buffer.from('/')
const NO_PATH = Buffer.alloc(0)

const decoded = (rel: Buffer) => rel.toString('utf8')

class Entry implements WalkEntry {
  kind: WalkEntry['kind'] = 'directory'
  target?: Buffer
  private text?: string

  constructor(readonly rel: Buffer, readonly abs: Buffer, readonly stats: BigIntStats, readonly dependency: boolean) {}

  get path(): string {
    return this.text ??= decoded(this.rel)
  }
}

/**
 * Depth-first, pre-order walk below `root` (an absolute real path), each directory's names in byte
 * order, the root `.git` and the `exclude`d paths skipped. Every entry is counted against `budget` when
 * it is reached (against the dependency limits in a directory `dependencies` matches; with
 * `skipDependencies` such a directory is left out like an excluded one) and every file's
 * size before it is read, so a tree that is too large fails right there. A symbolic link is read as a
 * link (its target), never followed; special files are refused. Synchronous: the caller paces it (see
 * `Pacer`).
 */
export function* walkTree(root: Buffer, rootStats: BigIntStats, budget: StampBudget, exclude: ReadonlySet<string> = new Set(),
  dependencies?: DependencyMatcher, skipDependencies = false): Generator<WalkEntry> {
  const excluded = [...exclude].map((path) => Buffer.from(path))
  const stack: OpenDirectory[] = [{ abs: root, rel: NO_PATH, names: listDirectory(root, '.', rootStats, true), next: 0, dependency: false }]
  while (stack.length) {
    const parent = stack[stack.length - 1]
    if (parent.next >= parent.names.length) {
      stack.pop()
      continue
    }
    const name = parent.names[parent.next++]
    const rel = parent.rel.length ? Buffer.concat([parent.rel, SLASH, name]) : name
    const abs = Buffer.concat([parent.abs, SLASH, name])
    // Left out as if absent (StampOptions.exclude): not counted, not framed, not walked.
    if (excluded.length && excluded.some((path) => path.equals(abs))) continue
    let stats: BigIntStats
    try {
      stats = lstatSync(abs, { bigint: true })
    } catch (error) {
      throw entryFsError(decoded(rel), 'inspected', error)
    }
    const isDirectory = stats.isDirectory()
    const dependency = parent.dependency || (isDirectory && dependencies !== undefined && dependencies.matches(name, rel))
    // Capturing only the workspace's own part: a dependency directory is neither counted nor walked.
    if (dependency && skipDependencies) continue
    const entry = new Entry(rel, abs, stats, dependency)
    budget.addEntry(entry, dependency)
    if (isDirectory) {
      yield entry
      stack.push({ abs, rel, names: listDirectory(abs, entry.path, stats, false), next: 0, dependency })
    } else if (stats.isFile()) {
      budget.addFileBytes(stats.size, entry, dependency)
      entry.kind = 'file'
      yield entry
    } else if (stats.isSymbolicLink()) {
      entry.kind = 'link'
      entry.target = readLink(abs, entry, stats)
      yield entry
    } else {
      throw unsupportedError(entry.path, specialTypeOf(stats))
    }
  }
}

/**
 * `read` of an entry that must be the one `stats` describes: the entry is looked at again afterwards, and
 * a version that moved (replaced, or written) while it was read fails the walk (`ARTIFACT_CHANGED`).
 */
function readUnchanged<T>(abs: Buffer, path: string, stats: BigIntStats, operation: string, read: () => T,
  reason: 'directory-changed' | 'replaced', what: string): T {
  let value: T
  let after: BigIntStats
  try {
    value = read()
    after = lstatSync(abs, { bigint: true })
  } catch (error) {
    throw entryFsError(path, operation, error)
  }
  const changes = versionChanges(versionOf(stats), versionOf(after))
  if (changes.length) throw changedError(path, reason, what, { changes })
  return value
}

/**
 * A directory's names in walk order. `readdir` follows a symlink, so the directory is looked at again
 * afterwards: if it was replaced (or its entries changed) while it was listed, the walk fails.
 */
function listDirectory(abs: Buffer, path: string, stats: BigIntStats, atRoot: boolean): Buffer[] {
  const names = readUnchanged(abs, path, stats, 'listed', () => readdirSync(abs, { encoding: 'buffer' }),
    'directory-changed', 'its entries changed while it was listed')
  return walkOrder(names, atRoot)
}

/**
 * A link's target. A link never changes in place (a new target is a new link, another inode), so the
 * same version before and after the read means the target read is the one listed.
 */
function readLink(abs: Buffer, entry: Entry, stats: BigIntStats): Buffer {
  return readUnchanged(abs, entry.path, stats, 'read as a link', () => readlinkSync(abs, { encoding: 'buffer' }),
    'replaced', 'it was replaced while its target was read')
}

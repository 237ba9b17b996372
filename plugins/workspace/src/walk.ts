import { lstatSync, readdirSync, type BigIntStats } from 'node:fs'
import { childPath, StampBudget, versionChanges, walkOrder } from '@taskward/protocol'
import { changedError, entryFsError, specialTypeOf, unsupportedError } from './fs-errors'
import { versionOf } from './version'

/** One entry the walk found, in walk order. */
export interface WalkEntry {
  kind: 'directory' | 'file'
  /** Path relative to the root, `/`-separated, in the filesystem's bytes: what the digest frames. */
  rel: Buffer
  /** `rel` decoded for messages and progress. */
  path: string
  abs: Buffer
  stats: BigIntStats
}

interface OpenDirectory {
  abs: Buffer
  rel: Buffer
  names: Buffer[]
  next: number
}

const SLASH = Buffer.from('/')
const NO_PATH = Buffer.alloc(0)

/**
 * Depth-first, pre-order walk below `root` (an absolute real path), each directory's names in byte
 * order, the root `.git` and the `exclude`d paths skipped. Every entry is counted against `budget` when it is reached and every
 * file's size before it is read, so a tree that is too large fails right there. Symlinks and special
 * files are refused, never followed. Synchronous: the caller paces it (see `Pacer`).
 */
export function* walkTree(root: Buffer, rootStats: BigIntStats, budget: StampBudget, exclude: ReadonlySet<string> = new Set()): Generator<WalkEntry> {
  const stack: OpenDirectory[] = [{ abs: root, rel: NO_PATH, names: listDirectory(root, '.', rootStats, true), next: 0 }]
  while (stack.length) {
    const parent = stack[stack.length - 1]
    if (parent.next >= parent.names.length) {
      stack.pop()
      continue
    }
    const name = parent.names[parent.next++]
    const relBytes = childPath(parent.rel, name)
    const rel = Buffer.from(relBytes.buffer, relBytes.byteOffset, relBytes.length)
    const path = rel.toString('utf8')
    const abs = Buffer.concat([parent.abs, SLASH, name])
    // Left out as if absent (StampOptions.exclude): not counted, not framed, not walked.
    if (exclude.size && exclude.has(abs.toString('utf8'))) continue
    budget.addEntry(path)
    let stats: BigIntStats
    try {
      stats = lstatSync(abs, { bigint: true })
    } catch (error) {
      throw entryFsError(path, 'inspected', error)
    }
    if (stats.isDirectory()) {
      yield { kind: 'directory', rel, path, abs, stats }
      stack.push({ abs, rel, names: listDirectory(abs, path, stats, false), next: 0 })
    } else if (stats.isFile()) {
      budget.addFileBytes(stats.size, path)
      yield { kind: 'file', rel, path, abs, stats }
    } else {
      throw unsupportedError(path, specialTypeOf(stats))
    }
  }
}

/**
 * A directory's names in walk order. `readdir` follows a symlink, so the directory is looked at again
 * afterwards: if it was replaced (or its entries changed) while it was listed, the walk fails.
 */
function listDirectory(abs: Buffer, path: string, stats: BigIntStats, atRoot: boolean): Buffer[] {
  let names: Buffer[]
  let after: BigIntStats
  try {
    names = readdirSync(abs, { encoding: 'buffer' })
    after = lstatSync(abs, { bigint: true })
  } catch (error) {
    throw entryFsError(path, 'listed', error)
  }
  const changes = versionChanges(versionOf(stats), versionOf(after))
  if (changes.length) throw changedError(path, 'directory-changed', 'its entries changed while it was listed', { changes })
  return walkOrder(names, atRoot)
}

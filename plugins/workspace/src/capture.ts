import type { BigIntStats } from 'node:fs'
import { StampBudget, StampDigest, type DependencyCounts, type DependencyMatcher, type StampLimits, type StampProgress } from '@taskward/protocol'
import { CHUNK_BYTES, hashFile } from './hash-file'
import { Pacer } from './pacer'
import type { CaptureHashes } from './stat-cache'
import { versionOf } from './version'
import { walkTree, type WalkEntry } from './walk'

export interface CaptureResult {
  digest: string
  entries: number
  files: number
  bytes: number
  links: number
  dependencies: DependencyCounts
}

export interface CaptureOptions {
  capture: 1 | 2
  limits: StampLimits
  signal?: AbortSignal
  onProgress?: (progress: StampProgress) => void
  expected?: { entries: number, bytes: number }
  exclude?: readonly string[]
  dependencies?: DependencyMatcher
  /** Content hashes this capture may reuse (an unchanged version) and passes on. */
  hashes?: CaptureHashes
}

/**
 * One full capture of the tree below `root`: entries are framed into the digest strictly in walk order,
 * one at a time, so the first problem in walk order is the one reported. The pacer yields to the event
 * loop between entries and chunks whenever a slice is used up, and ends the walk on abort. A file whose
 * version `hashes` knows is not read again (a stat cache, as git's index is).
 */
export async function captureTree(root: Buffer, rootStats: BigIntStats, options: CaptureOptions): Promise<CaptureResult> {
  const { capture, onProgress, expected, hashes } = options
  const pacer = new Pacer(options.signal)
  const budget = new StampBudget(options.limits)
  const digest = new StampDigest()
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES)
  const counts = { files: 0, links: 0, dependencyFiles: 0, dependencyLinks: 0 }
  let hashedBytes = 0
  const report = (path: string | undefined, done: boolean) => {
    onProgress?.({ capture, entries: budget.entries + budget.dependencyEntries, bytes: hashedBytes, ...(path !== undefined ? { path } : {}), done, ...(expected ? { expected } : {}) })
  }
  // The path is decoded only for a caller that follows the progress.
  const onChunk = (entry: WalkEntry, bytes: number) => {
    hashedBytes += bytes
    if (onProgress) report(entry.path, false)
  }

  await pacer.step()
  for (const entry of walkTree(root, rootStats, budget, new Set(options.exclude ?? []), options.dependencies)) {
    const meta = { mode: entry.stats.mode, mtimeNs: entry.stats.mtimeNs }
    if (entry.kind === 'directory') {
      digest.addDirectory(entry.rel, meta)
    } else if (entry.kind === 'link') {
      digest.addLink(entry.rel, entry.target!)
      counts.links++
      if (entry.dependency) counts.dependencyLinks++
    } else {
      const key = hashes ? entry.rel.toString('latin1') : ''
      // BigIntStats has every field of a version: compared as it is, copied only when recorded.
      let content = hashes?.reuse(key, entry.stats)
      if (content) {
        onChunk(entry, Number(entry.stats.size))
      } else {
        const readAtNs = BigInt(Date.now()) * 1_000_000n
        content = await hashFile(entry, buffer, pacer, (bytes) => onChunk(entry, bytes))
        hashes?.record(key, versionOf(entry.stats), content, readAtNs)
      }
      digest.addFile(entry.rel, { ...meta, size: entry.stats.size }, content)
      counts.files++
      if (entry.dependency) counts.dependencyFiles++
    }
    await pacer.step()
  }
  report(undefined, true)
  return {
    digest: digest.hex(),
    entries: budget.entries + budget.dependencyEntries,
    files: counts.files,
    bytes: budget.bytes + budget.dependencyBytes,
    links: counts.links,
    dependencies: { entries: budget.dependencyEntries, files: counts.dependencyFiles, bytes: budget.dependencyBytes, links: counts.dependencyLinks },
  }
}

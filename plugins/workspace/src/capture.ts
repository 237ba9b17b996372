import type { BigIntStats } from 'node:fs'
import { ContentDigest, PART_HEADERS, StampBudget, StampDigest, VersionDigest, type DependencyCounts, type DependencyMatcher, type StampLimits, type StampProgress } from '@taskward/protocol'
import { ChunkBuffer, hashFile } from './hash-file'
import { Pacer } from './pacer'
import type { CaptureHashes } from './stat-cache'
import { versionOf } from './version'
import { walkTree, type WalkEntry } from './walk'

export interface CaptureResult {
  /** The stamp digest (part `all` only; empty otherwise). */
  digest: string
  /** The part digests asked for (`partDigests`, or the one part captured). */
  parts: { own?: PartReading, dependencies?: PartReading }
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
  /**
   * What is captured: everything (`all`, the default), only what lies outside dependency directories
   * (`own`: they are not walked) or only what lies inside them (`dependencies`: the rest is walked to
   * find them, nothing of it hashed). A part is digested on its own (`PART_HEADERS`).
   */
  part?: CapturePart
  /** With part `all`: also the digests of both parts. */
  partDigests?: boolean
}

export type CapturePart = 'all' | 'own' | 'dependencies'

/**
 * A part's digests: `digest`, the stamp framing of its entries; `versions`, their stat identities
 * (`VersionDigest`: any write shows, even one put back); `content`, what a copy of them must hold
 * (`ContentDigest`: no times).
 */
export interface PartReading {
  digest: string
  versions: string
  content: string
  /** The part's entries (directories, files, links) and the bytes of its regular files: what a copy of it holds. */
  entries: number
  bytes: number
}

/** The three digests of one part, fed entry by entry. */
class PartDigests {
  readonly digest: StampDigest
  readonly versions = new VersionDigest()
  readonly content = new ContentDigest()

  constructor(header: string) {
    this.digest = new StampDigest(header)
  }

  reading(size: { entries: number, bytes: number }): PartReading {
    return { digest: this.digest.hex(), versions: this.versions.hex(), content: this.content.hex(), ...size }
  }
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
  const part = options.part ?? 'all'
  const digest = part === 'all' ? new StampDigest() : undefined
  const own = part === 'own' || (part === 'all' && options.partDigests) ? new PartDigests(PART_HEADERS.own) : undefined
  const dependencies = part === 'dependencies' || (part === 'all' && options.partDigests) ? new PartDigests(PART_HEADERS.dependencies) : undefined
  const chunks = new ChunkBuffer()
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
  for (const entry of walkTree(root, rootStats, budget, new Set(options.exclude ?? []), options.dependencies, part === 'own')) {
    const meta = { mode: entry.stats.mode, mtimeNs: entry.stats.mtimeNs }
    const partDigest = entry.dependency ? dependencies : own
    if (!digest && !partDigest) {
      // Walked to reach the part captured, not part of it (an own entry when capturing dependencies).
    } else if (entry.kind === 'directory') {
      digest?.addDirectory(entry.rel, meta)
      partDigest?.digest.addDirectory(entry.rel, meta)
      partDigest?.versions.add(entry.rel, entry.stats)
      partDigest?.content.addDirectory(entry.rel, entry.stats.mode)
    } else if (entry.kind === 'link') {
      digest?.addLink(entry.rel, entry.target!)
      partDigest?.digest.addLink(entry.rel, entry.target!)
      partDigest?.versions.add(entry.rel, entry.stats)
      partDigest?.content.addLink(entry.rel, entry.target!)
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
        content = await hashFile(entry, chunks.take(Number(entry.stats.size)), pacer, (bytes) => onChunk(entry, bytes))
        hashes?.record(key, versionOf(entry.stats), content, readAtNs)
      }
      digest?.addFile(entry.rel, { ...meta, size: entry.stats.size }, content)
      partDigest?.digest.addFile(entry.rel, { ...meta, size: entry.stats.size }, content)
      partDigest?.versions.add(entry.rel, entry.stats)
      partDigest?.content.addFile(entry.rel, entry.stats.mode, entry.stats.size, content)
      counts.files++
      if (entry.dependency) counts.dependencyFiles++
    }
    await pacer.step()
  }
  report(undefined, true)
  return {
    digest: digest?.hex() ?? '',
    parts: {
      ...own ? { own: own.reading({ entries: budget.entries, bytes: budget.bytes }) } : {},
      ...dependencies ? { dependencies: dependencies.reading({ entries: budget.dependencyEntries, bytes: budget.dependencyBytes }) } : {},
    },
    entries: budget.entries + budget.dependencyEntries,
    files: counts.files,
    bytes: budget.bytes + budget.dependencyBytes,
    links: counts.links,
    dependencies: { entries: budget.dependencyEntries, files: counts.dependencyFiles, bytes: budget.dependencyBytes, links: counts.dependencyLinks },
  }
}

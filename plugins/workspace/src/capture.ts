import type { BigIntStats } from 'node:fs'
import { StampBudget, StampDigest, type StampLimits, type StampProgress } from '@taskward/protocol'
import { CHUNK_BYTES, hashFile } from './hash-file'
import { Pacer } from './pacer'
import { walkTree } from './walk'

export interface CaptureResult {
  digest: string
  entries: number
  files: number
  bytes: number
}

export interface CaptureOptions {
  capture: 1 | 2
  limits: StampLimits
  signal?: AbortSignal
  onProgress?: (progress: StampProgress) => void
  expected?: { entries: number, bytes: number }
  exclude?: readonly string[]
}

/**
 * One full capture of the tree below `root`: entries are framed into the digest strictly in walk order,
 * one at a time, so the first problem in walk order is the one reported. The pacer yields to the event
 * loop between entries and chunks whenever a slice is used up, and ends the walk on abort.
 */
export async function captureTree(root: Buffer, rootStats: BigIntStats, options: CaptureOptions): Promise<CaptureResult> {
  const { capture, onProgress, expected } = options
  const pacer = new Pacer(options.signal)
  const budget = new StampBudget(options.limits)
  const digest = new StampDigest()
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES)
  let files = 0
  let hashedBytes = 0
  const report = (path: string | undefined, done: boolean) => {
    onProgress?.({ capture, entries: budget.entries, bytes: hashedBytes, ...(path !== undefined ? { path } : {}), done, ...(expected ? { expected } : {}) })
  }
  const onChunk = (path: string, bytes: number) => {
    hashedBytes += bytes
    report(path, false)
  }

  await pacer.step()
  for (const entry of walkTree(root, rootStats, budget, new Set(options.exclude ?? []))) {
    const meta = { mode: entry.stats.mode, mtimeNs: entry.stats.mtimeNs }
    if (entry.kind === 'directory') {
      digest.addDirectory(entry.rel, meta)
    } else {
      const content = await hashFile(entry, buffer, pacer, onChunk)
      digest.addFile(entry.rel, { ...meta, size: entry.stats.size }, content)
      files++
    }
    await pacer.step()
  }
  report(undefined, true)
  return { digest: digest.hex(), entries: budget.entries, files, bytes: budget.bytes }
}

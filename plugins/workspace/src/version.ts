import type { BigIntStats } from 'node:fs'
import type { EntryVersion } from '@taskward/protocol'

export function versionOf(stats: BigIntStats): EntryVersion {
  return { dev: stats.dev, ino: stats.ino, mode: stats.mode, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs }
}

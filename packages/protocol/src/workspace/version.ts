/**
 * An entry's version: the metadata that changes when the entry is written, replaced or chmod-ed.
 * Comparing the version seen when an entry was listed with the one seen after its content was read
 * tells whether it changed while it was being read.
 */
export interface EntryVersion {
  dev: bigint
  ino: bigint
  mode: bigint
  size: bigint
  mtimeNs: bigint
  ctimeNs: bigint
}

const VERSION_FIELDS: readonly (keyof EntryVersion)[] = ['dev', 'ino', 'mode', 'size', 'mtimeNs', 'ctimeNs']

/** Whether nothing of the version changed (`versionChanges` is empty), without building the list. */
export function sameVersion(a: EntryVersion, b: EntryVersion): boolean {
  return a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.size === b.size && a.mode === b.mode && a.dev === b.dev
}

/** The fields that differ, in a fixed order; empty when the entry is unchanged. */
export function versionChanges(before: EntryVersion, after: EntryVersion): (keyof EntryVersion)[] {
  return VERSION_FIELDS.filter((field) => before[field] !== after[field])
}

/**
 * How far a file's newest timestamp (mtime or ctime) must lie before the moment its content was read
 * for that hash to be reused while the file's version stays the same. A write lands a timestamp no
 * earlier than the file system's clock at that moment, which lags the wall clock by at most one tick
 * (≤ 10 ms on Linux); a file whose timestamps are that recent could be written again, content changed,
 * with the very same timestamps ("racily clean", as git's index calls it), so its content is hashed
 * every time until it is older than this. Two seconds also covers FAT's 2 s mtime.
 */
export const RACY_MARGIN_NS = 2_000_000_000n

/**
 * Whether a content hash read at `readAtNs` (wall clock, ns) from a file of `version` can stand for the
 * content of any later file with an identical version (device, inode, mode, size, mtime and ctime; ctime
 * cannot be set back from user space, so a write in between always shows). False while the file's
 * timestamps are within `RACY_MARGIN_NS` of the read, or in its future (a skewed clock).
 */
export function hashOutlivesRead(version: EntryVersion, readAtNs: bigint, marginNs = RACY_MARGIN_NS): boolean {
  const newest = version.mtimeNs > version.ctimeNs ? version.mtimeNs : version.ctimeNs
  return newest + marginNs < readAtNs
}

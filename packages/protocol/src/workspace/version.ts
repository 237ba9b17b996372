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

/** The fields that differ, in a fixed order; empty when the entry is unchanged. */
export function versionChanges(before: EntryVersion, after: EntryVersion): (keyof EntryVersion)[] {
  return VERSION_FIELDS.filter((field) => before[field] !== after[field])
}

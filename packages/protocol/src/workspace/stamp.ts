import Schema from 'schemastery'
import { TaskwardError } from '../errors'

/**
 * A workspace identity stamp: which directory (`workspaceKey`) and what was in it (`digest`) when it was
 * captured. It binds a repair confirmation to the workspace shown in the proposal; it is not an
 * acceptance snapshot and proves nothing about correctness.
 */
export interface WorkspaceStamp {
  /** sha256 hex of the root's real path, device and inode (see `workspaceKeyOf`). */
  workspaceKey: string
  /** sha256 hex of the framed walk (see `StampDigest`). */
  digest: string
  /** Regular files hashed (dependency directories included). */
  files: number
  /** Total size of those files in bytes. */
  bytes: number
  /** Symbolic links recorded (their targets, never followed). Absent on stamps from before links were. */
  links?: number
  /**
   * The part of the counts above that lies in dependency directories (`node_modules`, `.venv`…), and
   * their entries (directories, files, links); absent on stamps from before dependency directories were.
   */
  dependencies?: DependencyCounts
}

export interface DependencyCounts {
  entries: number
  files: number
  bytes: number
  links: number
}

/** What a caller learns while a stamp runs. Emitted at least once per regular file and once per capture end. */
export interface StampProgress {
  /** Which of the two captures is running. */
  capture: 1 | 2
  /** Entries (files, directories and links below the root, dependency directories included) walked so far in this capture. */
  entries: number
  /** Content bytes hashed so far in this capture. */
  bytes: number
  /** The file whose content was just hashed (relative, `/`-separated); absent on the `done` event. */
  path?: string
  /** True once, when the capture has finished. */
  done: boolean
  /** On the second capture: what the first one found, so a caller can show a percentage. */
  expected?: { entries: number, bytes: number }
}

/** Per-call options of `stamp(root, options)`. Limits override the configured ones for this call only. */
export interface StampOptions {
  /** Entries (files + directories below the root) allowed; overrides `repairMaxFiles`. */
  maxFiles?: number
  /** Regular-file bytes allowed; overrides `repairMaxBytes`. */
  maxBytes?: number
  /** Entries allowed in dependency directories; overrides `dependencyMaxEntries`. */
  maxDependencyEntries?: number
  /** Regular-file bytes allowed in dependency directories; overrides `dependencyMaxBytes`. */
  maxDependencyBytes?: number
  /** Aborting rejects the stamp with `ABORTED` and ends the walk. */
  signal?: AbortSignal
  /** Called synchronously as the walk proceeds; an exception thrown here fails the stamp. */
  onProgress?: (progress: StampProgress) => void
  /**
   * Real absolute paths below the root left out as if absent (nothing below one is walked): what is
   * not the workspace's own content, such as the host's data directory inside it.
   */
  exclude?: readonly string[]
}

const hex64 = Schema.string().pattern(/^[0-9a-f]{64}$/)

export const DependencyCountsSchema: Schema<DependencyCounts> = Schema.object({
  entries: Schema.natural().required(),
  files: Schema.natural().required(),
  bytes: Schema.natural().required(),
  links: Schema.natural().required(),
})

/** Validates a stamp read back from a record (for example a repair proposal). */
export const WorkspaceStampSchema: Schema<WorkspaceStamp> = Schema.object({
  workspaceKey: hex64.required(),
  digest: hex64.required(),
  files: Schema.natural().required(),
  bytes: Schema.natural().required(),
  links: Schema.natural(),
  // A union with undefined: schemastery fills an absent object with {} and would then miss its fields.
  dependencies: Schema.union([DependencyCountsSchema, Schema.const(undefined)]),
})

export type StampField = keyof WorkspaceStamp

const STAMP_FIELDS: readonly StampField[] = ['workspaceKey', 'digest', 'files', 'bytes']

/** The fields in which two stamps differ, in a fixed order; empty when they are the same stamp. */
export function compareStamps(a: WorkspaceStamp, b: WorkspaceStamp): StampField[] {
  return STAMP_FIELDS.filter((field) => a[field] !== b[field])
}

export function sameStamp(a: WorkspaceStamp, b: WorkspaceStamp): boolean {
  return compareStamps(a, b).length === 0
}

/**
 * Refuse with `ARTIFACT_CHANGED` unless `current` is the stamp `expected` was taken as: the check a
 * confirmation runs before it grants anything.
 */
export function requireSameStamp(expected: WorkspaceStamp, current: WorkspaceStamp): void {
  const differences = compareStamps(expected, current)
  if (!differences.length) return
  const where = differences.includes('workspaceKey')
    ? 'The stamp was taken of a different workspace (another directory, or the directory was replaced)'
    : 'The workspace changed since the stamp was taken'
  throw new TaskwardError('ARTIFACT_CHANGED',
    `${where} (${differences.join(', ')} differ). Propose the repair again so the proposal shows the workspace as it is now.`,
    { reason: 'stamp-mismatch', differences, expected, current })
}

/** What a stamp holds, the workspace's own files apart from its dependency directories (for display). */
export interface StampParts {
  own: { files: number, bytes: number, links: number }
  /** Absent on stamps from before dependency directories were set apart. */
  dependencies?: DependencyCounts
}

export function stampParts(stamp: Pick<WorkspaceStamp, 'files' | 'bytes' | 'links' | 'dependencies'>): StampParts {
  const deps = stamp.dependencies
  return {
    own: {
      files: stamp.files - (deps?.files ?? 0),
      bytes: stamp.bytes - (deps?.bytes ?? 0),
      links: (stamp.links ?? 0) - (deps?.links ?? 0),
    },
    ...deps ? { dependencies: deps } : {},
  }
}

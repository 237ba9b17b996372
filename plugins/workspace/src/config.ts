import Schema from 'schemastery'
import {
  DEFAULT_DEPENDENCY_DIRECTORIES, DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPENDENCY_BYTES, DEFAULT_MAX_DEPENDENCY_ENTRIES, DEFAULT_MAX_ENTRIES,
  strictConfig, validateDependencyPatterns,
} from '@taskward/protocol'

export interface Config {
  /** Entries (directories, files and links outside dependency directories) a stamp may walk. */
  repairMaxFiles: number
  /** Regular-file bytes outside dependency directories a stamp may hash. */
  repairMaxBytes: number
  /** Directory names (any depth) or root-relative paths whose content is installed dependencies. */
  dependencyDirectories: string[]
  /** Entries a stamp may walk inside dependency directories. */
  dependencyMaxEntries: number
  /** Regular-file bytes a stamp may hash inside dependency directories. */
  dependencyMaxBytes: number
  /** Keep content hashes of unchanged files between stamps (and restarts). */
  statCache: boolean
}

// A positive safe integer; schemastery refuses 0, fractions, strings, NaN and Infinity at load.
const positiveInteger = () => Schema.natural().min(1).max(Number.MAX_SAFE_INTEGER)

const dependencyPatterns = Schema.transform(Schema.array(Schema.string()), (patterns) => {
  validateDependencyPatterns(patterns)
  return patterns
}, true)

export const Config: Schema<Partial<Config>, Config> = strictConfig('workspace', Schema.object({
  repairMaxFiles: positiveInteger().default(DEFAULT_MAX_ENTRIES)
    .description('Most entries (files, directories and links outside dependency directories, not counting the root .git) a workspace stamp may walk. A larger tree fails with ARTIFACT_LIMIT.'),
  repairMaxBytes: positiveInteger().default(DEFAULT_MAX_BYTES)
    .description('Most bytes of file content outside dependency directories a workspace stamp may hash. A larger tree fails with ARTIFACT_LIMIT.'),
  dependencyDirectories: dependencyPatterns.default([...DEFAULT_DEPENDENCY_DIRECTORIES])
    .description('Dependency directories: a name (node_modules) matches at any depth, a path with / (.yarn/cache) from the workspace root. Still stamped, under their own limits; mounted read-only, not copied, into a sandboxed check. [] turns the policy off.'),
  dependencyMaxEntries: positiveInteger().default(DEFAULT_MAX_DEPENDENCY_ENTRIES)
    .description('Most entries inside dependency directories a workspace stamp may walk. More fails with ARTIFACT_LIMIT.'),
  dependencyMaxBytes: positiveInteger().default(DEFAULT_MAX_DEPENDENCY_BYTES)
    .description('Most bytes of file content inside dependency directories a workspace stamp may hash. More fails with ARTIFACT_LIMIT.'),
  statCache: Schema.boolean().default(true)
    .description('Reuse the content hash of a file whose device, inode, mode, size, mtime and ctime are unchanged since it was read (kept in the data directory across restarts).'),
}))
